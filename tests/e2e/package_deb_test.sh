#!/usr/bin/env bash
# The .deb built by CPack (issue 19): its file list and control fields. Builds the package from
# the build dir into a temporary directory (cpack -G DEB, a few seconds); never installs it.
# Usage: package_deb_test.sh BUILD_DIR
set -uo pipefail
build=$1
work=$(mktemp -d /tmp/sandrun-deb-XXXXXX)
trap 'rm -rf "$work"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

(cd "$build" && cpack -G DEB -B "$work" >"$work/cpack.log" 2>&1) || {
  cat "$work/cpack.log"
  echo "FAIL: cpack -G DEB"
  exit 1
}
deb=$(ls "$work"/sandrun_*.deb 2>/dev/null | head -n 1)
[ -n "$deb" ] || { ls -la "$work"; echo "FAIL: no sandrun_*.deb"; exit 1; }
echo "package: $(basename "$deb")"

# Paths and modes of every file (the listing's 6th column, without the leading ".").
listing=$(dpkg-deb -c "$deb")
files=$(awk '$1 !~ /^d/ {sub(/^\./, "", $6); print $1, $6}' <<<"$listing")
has() { grep -qxF -e "$1" <<<"$files" || fail "missing or wrong mode: $1"; }
has '-rwxr-xr-x /usr/bin/sandrun'
has '-rwxr-xr-x /usr/bin/sandrun-exec'
has '-rwxr-xr-x /usr/bin/sandrun-agent'
has '-rw-r--r-- /usr/share/sandrun/profiles/seccomp/default.json'
has '-rw-r--r-- /usr/share/sandrun/profiles/host/default.json'
has '-rw-r--r-- /usr/share/sandrun/profiles/containers/default.json'
has '-rw-r--r-- /usr/share/sandrun/profiles/env/default.json'
has '-rwxr-xr-x /usr/share/sandrun/images/minimal/rootfs.sh'
has '-rwxr-xr-x /usr/share/sandrun/images/bookworm/rootfs.sh'
has '-rw-r--r-- /usr/share/sandrun/images/common/profile'
has '-rw-r--r-- /usr/lib/systemd/system/sandrun.service'
# Nothing but sandrun's binaries, data, unit and docs: no test binary, helper or library.
unexpected=$(awk '{print $2}' <<<"$files" | grep -vE '^/usr/bin/sandrun(-exec|-agent)?$|^/usr/share/sandrun/(profiles|images)/|^/usr/lib/systemd/system/sandrun\.service$|^/usr/share/doc/sandrun/')
[ -z "$unexpected" ] || fail "unexpected files in the package: $unexpected"
# Every profile and recipe of the source tree is in it.
src=$(cd "$(dirname "$0")/../.." && pwd)
for f in $(cd "$src" && find profiles images -type f); do
  grep -q " /usr/share/sandrun/$f\$" <<<"$files" || fail "the package lacks $f"
done

# Control fields.
field() { dpkg-deb -f "$deb" "$1"; }
[ "$(field Package)" = sandrun ] || fail "Package: $(field Package)"
[ "$(field Version)" = "$(grep -oP 'project\(sandrun VERSION \K[0-9.]+' "$src/CMakeLists.txt")" ] \
  || fail "Version: $(field Version)"
[ "$(field Architecture)" = "$(dpkg --print-architecture)" ] || fail "Architecture: $(field Architecture)"
depends=$(field Depends)
for dep in libc6 libssl3 libcurl4; do
  grep -qE "(^|, )$dep( |,|$)" <<<"$depends" || fail "Depends lacks $dep: $depends"
done
# What the binary links must be covered by Depends (libcurl is dlopen'ed, so it is not NEEDED).
for lib in $(objdump -p "$build/sandrun" | awk '$1 == "NEEDED" {print $2}'); do
  case "$lib" in
    libc.so.* | libm.so.* | ld-linux*) pkg=libc6 ;;
    libssl.so.3 | libcrypto.so.3) pkg=libssl3 ;;
    libstdc++.so.*) pkg=libstdc++6 ;;
    libgcc_s.so.*) pkg=libgcc-s1 ;;
    libseccomp.so.*) pkg=libseccomp2 ;;
    libcap.so.*) pkg=libcap2 ;;
    *) pkg="?$lib" ;;
  esac
  grep -qE "(^|, )$pkg( |,|$)" <<<"$depends" || fail "sandrun needs $lib but Depends lacks $pkg: $depends"
done
grep -q 'docker.io' <<<"$(field Recommends)" || fail "Recommends lacks docker.io"
[ -n "$(field Maintainer)" ] || fail "no Maintainer"
[ -n "$(field Description)" ] || fail "no Description"

# The maintainer scripts and the unit.
dpkg-deb -e "$deb" "$work/control"
for s in postinst prerm postrm; do
  [ -x "$work/control/$s" ] || fail "no executable $s"
  sh -n "$work/control/$s" || fail "$s is not valid sh"
done
dpkg-deb -x "$deb" "$work/root"
unit=$work/root/usr/lib/systemd/system/sandrun.service
for line in 'ExecStart=/usr/bin/sandrun serve' 'Environment=SANDRUN_HOME=/var/lib/sandrun' \
  'StateDirectory=sandrun' 'StateDirectoryMode=0700' 'Restart=on-failure' \
  'WantedBy=multi-user.target'; do
  grep -qx "$line" "$unit" || fail "the unit lacks $line"
done
# The packaged tree works where it was unpacked: its share dir is found from its binary.
out=$("$work/root/usr/bin/sandrun" --help 2>&1) || fail "the packaged binary does not run: $out"
if command -v systemd-analyze >/dev/null; then
  systemd-analyze verify "$unit" 2>&1 | grep -v 'docker.service' | grep -i 'error\|invalid' \
    && fail "systemd-analyze verify reports errors"
fi

[ "$failures" -eq 0 ] || { echo "$failures failure(s)"; exit 1; }
echo "ok"
