#pragma once
// The kiln command line: one file per subcommand, each adding itself to the CLI11 app.

#include <CLI/CLI.hpp>

namespace kiln::cli {

// Runs the kiln binary. Exit codes (DESIGN.md): 0 success; 1 a job, gate or check failed;
// 2 bad input; 3 internal error.
int main(int argc, char** argv);

// Each subcommand file defines one adder. The subcommand's callback stores its exit code in
// `exit_code`; the adder keeps whatever options it needs alive in static or heap storage.
void add_run_command(CLI::App& app, int& exit_code);
void add_validate_command(CLI::App& app, int& exit_code);
void add_images_command(CLI::App& app, int& exit_code);
void add_runs_command(CLI::App& app, int& exit_code);
void add_logs_command(CLI::App& app, int& exit_code);
void add_hipcheck_command(CLI::App& app, int& exit_code);
void add_gpus_command(CLI::App& app, int& exit_code);
void add_bench_command(CLI::App& app, int& exit_code);
void add_report_command(CLI::App& app, int& exit_code);
void add_metrics_command(CLI::App& app, int& exit_code);
void add_usage_command(CLI::App& app, int& exit_code);
void add_serve_commands(CLI::App& app, int& exit_code);  // serve, approve, trigger
void add_rerun_command(CLI::App& app, int& exit_code);
void add_cancel_command(CLI::App& app, int& exit_code);
void add_watch_command(CLI::App& app, int& exit_code);
void add_exec_commands(CLI::App& app, int& exit_code);  // exec, release
void add_migrate_command(CLI::App& app, int& exit_code);
void add_tests_command(CLI::App& app, int& exit_code);       // tests list|quarantine|release
void add_agent_command(CLI::App& app, int& exit_code);       // Slurm jobs (slurm_agent.h)
void add_completion_command(CLI::App& app, int& exit_code);  // kiln completion bash

}  // namespace kiln::cli
