#include "kiln/cli/app.h"

int main(int argc, char** argv) { return kiln::cli::main(argc, argv); }
