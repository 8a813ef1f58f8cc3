"""Stand-in torch.distributed.run: starts --nproc-per-node copies of the script with RANK,
LOCAL_RANK and WORLD_SIZE, and fails when one of them fails."""
import argparse
import os
import subprocess
import sys
import tempfile


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--nproc-per-node", "--nproc_per_node", type=int, default=1)
    parser.add_argument("script")
    parser.add_argument("args", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as rendezvous:
        processes = []
        for rank in range(args.nproc_per_node):
            env = dict(os.environ, RANK=str(rank), LOCAL_RANK=str(rank),
                       WORLD_SIZE=str(args.nproc_per_node), KILN_STANDIN_RENDEZVOUS=rendezvous)
            processes.append(subprocess.Popen([sys.executable, args.script, *args.args], env=env))
        codes = [process.wait() for process in processes]
    print(f"torch.distributed.run (stand-in): {len(codes)} ranks, exit codes {codes}")
    sys.exit(0 if all(code == 0 for code in codes) else 1)


if __name__ == "__main__":
    main()
