#!/usr/bin/env bash
# images/bookworm/rootfs.sh OUT_TAR
#
# Builds the rootfs of sandrun-sandbox:bookworm with debootstrap (variant
# minbase + bash, coreutils, python3, python3-pip, git, curl, ca-certificates,
# jq, ripgrep, procps: what agents reach for), trims caches,
# installs the shared /etc/profile and writes an uncompressed tar (numeric
# owners, entries like ./usr/bin/bash) to OUT_TAR. Progress goes to stderr;
# stdout stays empty. Needs root and network access to a Debian mirror; takes a
# few minutes.
#
# Environment:
#   SANDRUN_DEBIAN_MIRROR  mirror URL to use instead of the one configured in
#                          /etc/apt/sources.list.d/debian.sources (or
#                          /etc/apt/sources.list); default http://deb.debian.org/debian
set -euo pipefail
umask 022

prog=bookworm/rootfs.sh
suite=bookworm
packages=bash,coreutils,python3,python3-pip,git,curl,ca-certificates,jq,ripgrep,procps
fallback_mirror=http://deb.debian.org/debian

log() { printf '%s: %s\n' "$prog" "$*" >&2; }
die() { printf '%s: error: %s\n' "$prog" "$*" >&2; exit 1; }

[[ $# -eq 1 && -n $1 ]] || die "usage: rootfs.sh OUT_TAR"
out=$1
out_dir=$(dirname -- "$out")
[[ -d $out_dir && -w $out_dir ]] || die "output directory '$out_dir' does not exist or is not writable"
[[ $EUID -eq 0 ]] || die "must run as root (debootstrap needs it)"
command -v debootstrap >/dev/null 2>&1 || die "debootstrap not found (apt-get install debootstrap)"

here=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
# $SANDRUN_COMMON_DIR: set by `sandrun image build`, so a copy of this recipe elsewhere works too.
profile=${SANDRUN_COMMON_DIR:-$here/../common}/profile
[[ -r $profile ]] || die "missing shared profile: $profile"

# The Debian mirror the host's apt uses for $suite: first URI of a deb822
# stanza (Types: deb) whose Suites include exactly "$suite", else a one-line
# "deb URI $suite" entry, else $fallback_mirror.
find_mirror() {
    local f=/etc/apt/sources.list.d/debian.sources uri=
    if [[ -r $f ]]; then
        uri=$(awk -v suite="$suite" '
            function flush() {
                if (is_deb && has_suite && first_uri != "" && !done) { print first_uri; done = 1 }
                is_deb = 0; has_suite = 0; first_uri = ""
            }
            /^[[:space:]]*#/ { next }
            /^[[:space:]]*$/ { flush(); next }
            {
                key = tolower($1)
                if (key == "types:") { for (i = 2; i <= NF; i++) if ($i == "deb") is_deb = 1 }
                else if (key == "suites:") { for (i = 2; i <= NF; i++) if ($i == suite) has_suite = 1 }
                else if (key == "uris:" && NF >= 2) first_uri = $2
            }
            END { flush() }' "$f")
    fi
    if [[ -z $uri && -r /etc/apt/sources.list ]]; then
        uri=$(awk -v suite="$suite" '
            $1 == "deb" {
                i = 2
                if ($i ~ /^\[/) { while (i <= NF && $i !~ /\]$/) i++; i++ }
                if ($(i + 1) == suite) { print $i; exit }
            }' /etc/apt/sources.list)
    fi
    printf '%s\n' "${uri:-$fallback_mirror}"
}

mirror=${SANDRUN_DEBIAN_MIRROR:-$(find_mirror)}
[[ $mirror =~ ^(https?|file):// ]] || die "unsupported mirror URL '$mirror'"

work=
partial=
dbs_pid=
# Stops a process and everything below it (debootstrap runs dpkg & co. in the chroot).
kill_tree() {
    local pid=$1 child
    kill -STOP "$pid" 2>/dev/null || return 0
    if command -v ps >/dev/null 2>&1; then
        for child in $(ps -o pid= --ppid "$pid" 2>/dev/null); do kill_tree "$child"; done
    fi
    kill -TERM "$pid" 2>/dev/null || true
    kill -CONT "$pid" 2>/dev/null || true
}
cleanup() {
    if [[ -n $dbs_pid ]] && kill -0 "$dbs_pid" 2>/dev/null; then
        log "stopping debootstrap (pid $dbs_pid)"
        kill_tree "$dbs_pid"
        wait "$dbs_pid" 2>/dev/null || true
    fi
    if [[ -n $work && -d $work ]]; then
        # debootstrap mounts proc/sys inside the target while it runs; never
        # delete through a mount point (deepest first, then --one-file-system).
        local m
        while read -r m; do
            umount -l -- "$m" 2>/dev/null || true
        done < <(awk -v p="$work/" 'index($2, p) == 1 { print $2 }' /proc/mounts | sort -r)
        rm -rf --one-file-system -- "$work"
    fi
    if [[ -n $partial ]]; then rm -f -- "$partial"; fi
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

work=$(mktemp -d "${TMPDIR:-/var/tmp}/sandrun-bookworm.XXXXXX")
root=$work/rootfs
mkdir -m 0755 "$root"

log "debootstrap --variant=minbase --include=$packages $suite from $mirror (takes a few minutes)"
# In the background so that INT/TERM reach our trap (and stop it) right away.
debootstrap --variant=minbase --include="$packages" "$suite" "$root" "$mirror" >&2 &
dbs_pid=$!
if ! wait "$dbs_pid"; then
    dbs_pid=
    if [[ -r $root/debootstrap/debootstrap.log ]]; then
        log "last lines of debootstrap.log:"
        tail -n 20 -- "$root/debootstrap/debootstrap.log" >&2 || true
    fi
    die "debootstrap failed (mirror $mirror)"
fi
dbs_pid=

for tool in bash python3 pip3 git curl jq rg ps sleep; do
    [[ -x $root/usr/bin/$tool || -x $root/bin/$tool ]] || die "debootstrap finished but '$tool' is missing"
done

# Debian marks its python as externally managed (PEP 668), which makes pip refuse every
# install. sandrun's containers have a read-only root, so pip can only install into the
# scope's HOME (it falls back to --user when site-packages is not writable) or a --target:
# the marker would only turn those away.
rm -f -- "$root"/usr/lib/python3*/EXTERNALLY-MANAGED

log "trimming caches"
rm -rf --one-file-system -- "${root:?}"/debootstrap
rm -f -- "${root:?}"/var/cache/apt/archives/*.deb "${root:?}"/var/cache/apt/archives/partial/*.deb
rm -f -- "${root:?}"/var/cache/apt/*.bin
rm -rf --one-file-system -- "${root:?}"/var/lib/apt/lists/*
rm -f -- "${root:?}"/var/cache/debconf/*-old "${root:?}"/var/lib/dpkg/*-old
rm -f -- "${root:?}"/var/log/dpkg.log "${root:?}"/var/log/alternatives.log "${root:?}"/var/log/bootstrap.log
rm -rf --one-file-system -- "${root:?}"/var/log/apt/*
rm -rf --one-file-system -- "${root:?}"/tmp/* "${root:?}"/var/tmp/*

log "slimming docs, man pages and translations (copyright files kept)"
# Same trimming as the official *-slim Debian images; the dpkg excludes keep
# later package installs consistent with it.
mkdir -p "${root:?}/etc/dpkg/dpkg.cfg.d"
cat >"${root:?}/etc/dpkg/dpkg.cfg.d/sandrun-slim" <<'EOF'
# sandrun-sandbox:bookworm: no docs, man pages or translations (copyright files kept).
path-exclude /usr/share/doc/*
path-include /usr/share/doc/*/copyright
path-exclude /usr/share/man/*
path-exclude /usr/share/info/*
path-exclude /usr/share/groff/*
path-exclude /usr/share/lintian/*
path-exclude /usr/share/locale/*
path-include /usr/share/locale/locale.alias
EOF
find "${root:?}/usr/share/doc" -mindepth 1 ! -type d ! -name copyright -delete
find "${root:?}/usr/share/doc" -mindepth 1 -depth -type d -empty -delete
rm -rf --one-file-system -- "${root:?}"/usr/share/man/* "${root:?}"/usr/share/info/* \
    "${root:?}"/usr/share/groff/* "${root:?}"/usr/share/lintian/*
find "${root:?}/usr/share/locale" -mindepth 1 -maxdepth 1 ! -name locale.alias -exec rm -rf --one-file-system -- {} +

log "removing /dev entries and host files (docker provides them)"
rm -rf --one-file-system -- "${root:?}"/dev/*
# debootstrap copies these from the build host; docker bind-mounts its own.
rm -f -- "$root/etc/hostname" "$root/etc/resolv.conf"
printf '127.0.0.1\tlocalhost\n::1\t\tlocalhost ip6-localhost ip6-loopback\n' >"$root/etc/hosts"

log "installing /etc/profile and /workspace"
install -m 0644 "$profile" "$root/etc/profile"
mkdir -p "$root/etc/profile.d" "$root/workspace"
chmod 1777 "$root/tmp" "$root/var/tmp"

log "writing $out"
partial=$out.partial.$$
if awk -v p="$root/" 'index($2, p) == 1 { found = 1 } END { exit !found }' /proc/mounts; then
    die "something is still mounted below $root"
fi
tar --numeric-owner --one-file-system -C "$root" -cf "$partial" .
mv -f -- "$partial" "$out"
partial=
log "done: $(du -h -- "$out" | cut -f1) in $out"
