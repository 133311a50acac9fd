#!/bin/sh
# Builds and runs multiline-bench.swift with the library's matcher sources (-O).
set -e
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
out=$(mktemp -d)
swiftc -O -parse-as-library -package-name bench -o "$out/multiline-bench" "$here/multiline-bench.swift" \
    "$root/Sources/StreamUp/Records/Multiline/MultilineMatcher.swift" "$root/Sources/StreamUp/Records/Multiline/MultilineRule.swift"
"$out/multiline-bench"
rm -rf "$out"
