#!/usr/bin/env python3
"""Fails when a module includes a module below it in the module order (DESIGN.md).

The order is CMakeLists.txt's list of add_subdirectory(src/kiln/...) lines: a module may include
its own headers and those of the modules listed before it, never one listed after it. A file's
module is the longest listed folder that holds it (workflow/expr/ is its own module inside
workflow/). Prints one FILE:LINE:COL: error line per include that goes up, exits 1 if any.

    tests/checks/include_order.py [ROOT]     # ROOT: the source tree (default: this repository)
"""
import pathlib
import re
import sys

MODULE_LINE = re.compile(r"^\s*add_subdirectory\(\s*src/kiln/([A-Za-z0-9_/]+?)\s*\)", re.M)
INCLUDE_LINE = re.compile(r'^\s*#\s*include\s*[<"]kiln/([^">]+)[">]')


def module_order(root):
    cmake = root / "CMakeLists.txt"
    modules = MODULE_LINE.findall(cmake.read_text())
    if not modules:
        sys.exit(f"{cmake}:1:1: error: no add_subdirectory(src/kiln/...) lines")
    return modules


def module_of(path, modules):
    """The longest listed module folder that holds path (relative to src/kiln/), or None."""
    best = None
    for module in modules:
        if (path == module or path.startswith(module + "/")) and (
            best is None or len(module) > len(best)
        ):
            best = module
    return best


def main():
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).parents[2])
    modules = module_order(root)
    rank = {module: index for index, module in enumerate(modules)}
    src = root / "src" / "kiln"
    errors = 0
    for source in sorted(src.rglob("*")):
        if source.suffix not in (".cpp", ".h") or not source.is_file():
            continue
        relative = source.relative_to(src).as_posix()
        own = module_of(relative, modules)
        shown = source.relative_to(root)
        if own is None:
            print(f"{shown}:1:1: error: not in a module listed in CMakeLists.txt")
            errors += 1
            continue
        for number, line in enumerate(source.read_text(errors="replace").splitlines(), 1):
            match = INCLUDE_LINE.match(line)
            if not match:
                continue
            target = module_of(match.group(1), modules)
            column = line.index("kiln/") + 1
            if target is None:
                print(f"{shown}:{number}:{column}: error: kiln/{match.group(1)} is in no module "
                      "listed in CMakeLists.txt")
                errors += 1
            elif rank[target] > rank[own]:
                print(f"{shown}:{number}:{column}: error: {own}/ includes kiln/{match.group(1)}, "
                      f"but {target}/ comes after {own}/ in CMakeLists.txt's module order "
                      "(a module only uses the modules above it: DESIGN.md)")
                errors += 1
    if errors:
        print(f"include_order: {errors} include(s) against the module order")
        return 1
    print(f"include_order: {len(modules)} modules, no include against the order")
    return 0


if __name__ == "__main__":
    sys.exit(main())
