#!/usr/bin/env bash
# `make dist`: the installed tree of a portable release build as a tarball,
# build-release/kvplan-VERSION-linux-ARCH.tar.gz. Refuses an artefact that
# would not run on a bare glibc machine (a shared library other than glibc's)
# or that is larger than 10 MB (issue: "at most 10 MB").
set -euo pipefail
build_dir=${1:-build-release}
version=$("$build_dir/kvplan" --version | awk '{print $2}')
name="kvplan-$version-linux-$(uname -m)"
stage="$build_dir/dist/$name"
rm -rf "$build_dir/dist"
cmake --install "$build_dir" --prefix "$stage" --strip > /dev/null

# glibc's own libraries are on every Linux machine; anything else is not.
others=$(ldd "$stage/bin/kvplan" | awk '{print $1}' |
  grep -Ev '^(linux-vdso\.so|/lib64/ld-linux|ld-linux|libc\.so|libm\.so|libpthread\.so|libdl\.so|librt\.so)' || true)
if [ -n "$others" ]; then
  echo "dist: $stage/bin/kvplan links more than glibc: $others" >&2
  exit 1
fi
tarball="$build_dir/$name.tar.gz"
tar -C "$build_dir/dist" -czf "$tarball.tmp" "$name"
mv "$tarball.tmp" "$tarball"
bytes=$(stat -c %s "$tarball")
if [ "$bytes" -gt 10000000 ]; then
  echo "dist: $tarball is $bytes bytes, over the 10 MB limit" >&2
  exit 1
fi
echo "dist: $tarball ($bytes bytes); $stage/bin/kvplan links:"
ldd "$stage/bin/kvplan" | sed 's/^/  /'
