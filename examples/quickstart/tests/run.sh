#!/usr/bin/env bash
# tests/run.sh OP SIZE: checks build/calc on numbers of one size.
set -euo pipefail
op=$1 size=$2
case $size in small) a=2 b=3 ;; large) a=40000 b=50000 ;; huge) a=3000000 b=4000000 ;; esac
case $op in add) want=$((a + b)) ;; mul) want=$((a * b)) ;; esac
got=$(./build/calc "$op" "$a" "$b")
if [ "$got" != "$want" ]; then echo "calc $op $a $b = $got, want $want"; exit 1; fi
echo "ok: calc $op $a $b = $got"
