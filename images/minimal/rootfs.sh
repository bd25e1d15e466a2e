#!/usr/bin/env bash
# images/minimal/rootfs.sh OUT_TAR
#
# Builds the rootfs of sandrun-sandbox:minimal: a statically linked busybox
# (package busybox-static) plus one symlink per applet, a few /etc files and the
# shared /etc/profile. Writes it as an uncompressed tar (numeric owners, entries
# like ./bin/sh) to OUT_TAR. Progress goes to stderr; stdout stays empty.
#
# Environment:
#   BUSYBOX   busybox binary to install (default: /bin/busybox); must be static.
set -euo pipefail
umask 022

prog=minimal/rootfs.sh
log() { printf '%s: %s\n' "$prog" "$*" >&2; }
die() { printf '%s: error: %s\n' "$prog" "$*" >&2; exit 1; }

[[ $# -eq 1 && -n $1 ]] || die "usage: rootfs.sh OUT_TAR"
out=$1
out_dir=$(dirname -- "$out")
[[ -d $out_dir && -w $out_dir ]] || die "output directory '$out_dir' does not exist or is not writable"

here=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
# $SANDRUN_COMMON_DIR: set by `sandrun image build`, so a copy of this recipe elsewhere works too.
profile=${SANDRUN_COMMON_DIR:-$here/../common}/profile
[[ -r $profile ]] || die "missing shared profile: $profile"

busybox=${BUSYBOX:-/bin/busybox}
[[ -x $busybox ]] || die "busybox not found at '$busybox' (install the busybox-static package)"

work=
partial=
cleanup() {
    if [[ -n $work && -d $work ]]; then rm -rf --one-file-system -- "$work"; fi
    if [[ -n $partial ]]; then rm -f -- "$partial"; fi
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

work=$(mktemp -d "${TMPDIR:-/tmp}/sandrun-minimal.XXXXXX")
root=$work/rootfs
mkdir -m 0755 "$root"

log "installing busybox from $busybox"
mkdir -p "$root/bin"
install -m 0755 "$busybox" "$root/bin/busybox"

# The binary must run without any shared library: prove it inside the rootfs.
if [[ $EUID -eq 0 ]] && command -v chroot >/dev/null 2>&1; then
    chroot "$root" /bin/busybox true ||
        die "$busybox does not run in an empty rootfs (is it the static build from busybox-static?)"
fi

log "creating applet symlinks"
mapfile -t applets < <("$root/bin/busybox" --list-full)
[[ ${#applets[@]} -gt 0 ]] || die "'busybox --list-full' printed nothing"
# Keep only real applet paths: skip entries without a directory (linuxrc) and busybox itself.
wanted=()
declare -A dirs=()
for rel in "${applets[@]}"; do
    [[ $rel == */* && $rel != bin/busybox ]] || continue
    wanted+=("$rel")
    dirs[${rel%/*}]=1
done
dir_list=("${!dirs[@]}")
mkdir -p "${dir_list[@]/#/$root/}"
# Fast path (a few ms): let busybox create its own links at their full paths
# inside the rootfs. The result is checked below and completed with ln(1),
# which costs one fork per applet, when this is not possible (not root).
if [[ $EUID -eq 0 ]] && command -v chroot >/dev/null 2>&1; then
    chroot "$root" /bin/busybox --install -s 2>/dev/null || true
    rm -f -- "$root/linuxrc"
fi
# Any link not pointing at /bin/busybox is wrong: remove it and redo it.
find "$root" -type l ! -lname /bin/busybox -delete
count=0
for rel in "${wanted[@]}"; do
    [[ -L $root/$rel ]] || ln -s /bin/busybox "$root/$rel"
    count=$((count + 1))
done
for required in sh sleep cat ls env id; do
    [[ -L $root/bin/$required || -L $root/usr/bin/$required ]] ||
        die "busybox has no '$required' applet"
done
log "linked $count applets"

log "writing /etc"
mkdir -p "$root/etc/profile.d"
install -m 0644 "$profile" "$root/etc/profile"
cat >"$root/etc/passwd" <<'EOF'
root:x:0:0:root:/root:/bin/sh
nobody:x:65534:65534:nobody:/nonexistent:/bin/false
EOF
cat >"$root/etc/group" <<'EOF'
root:x:0:
nogroup:x:65534:
EOF
chmod 0644 "$root/etc/passwd" "$root/etc/group"
bb_version=$("$root/bin/busybox" 2>/dev/null | sed -n '1s/^BusyBox \(v[^ ]*\).*/\1/p' || true)
cat >"$root/etc/os-release" <<EOF
PRETTY_NAME="sandrun minimal (BusyBox ${bb_version:-unknown})"
NAME="sandrun minimal"
ID=sandrun-minimal
VERSION_ID="${bb_version#v}"
EOF
chmod 0644 "$root/etc/os-release"

log "creating directories"
mkdir -p "$root/proc" "$root/sys" "$root/dev" "$root/run" "$root/var/tmp" \
    "$root/workspace" "$root/home" "$root/root" "$root/tmp"
chmod 1777 "$root/tmp" "$root/var/tmp"
chmod 0700 "$root/root"

log "writing $out"
partial=$out.partial.$$
tar --numeric-owner --owner=0 --group=0 -C "$root" -cf "$partial" .
mv -f -- "$partial" "$out"
partial=
log "done: $(du -h -- "$out" | cut -f1) in $out"
