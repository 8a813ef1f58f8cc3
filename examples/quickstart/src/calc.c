/* calc OP A B: prints A+B or A*B. The quickstart's "product". */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char** argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: calc add|mul A B\n");
    return 2;
  }
  long a = strtol(argv[2], NULL, 10), b = strtol(argv[3], NULL, 10);
  if (strcmp(argv[1], "add") == 0) printf("%ld\n", a + b);
  else if (strcmp(argv[1], "mul") == 0) printf("%ld\n", a * b);
  else return 2;
  return 0;
}
