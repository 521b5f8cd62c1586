#!/bin/bash
# Prepares a fresh Debian or Ubuntu machine for chibifs and builds it. Idempotent: run it again
# at any time; it installs only what is missing and never upgrades what is there.
#
#   scripts/provision.sh [--allow-other] [--install] [--no-build | --rebuild]   (as root, or it re-runs
#                   itself with sudo when it has something to install; a user with everything installed
#                   builds without)
#
#   --allow-other  put user_allow_other in /etc/fuse.conf, so a non-root daemon may mount with
#                  allow_other (uid-mapped mounts need it; a root daemon does not)
#   --install      link the launcher and the mount helper, and copy the systemd unit, into the system:
#                  /usr/local/bin/chibifs, /usr/local/bin/chibifs-wait-mounted,
#                  /sbin/mount.fuse.chibifs, /usr/local/share/doc/chibifs (the docs, which the unit's
#                  Documentation= names), /etc/systemd/system/chibifs@.service
#   --uninstall    remove what --install put there (links that lead into this checkout, and the
#                  unit if it is still this checkout's); /etc/chibifs and every store are kept.
#                  Installs and builds nothing.
#   --no-build     skip ./mvnw package
#   --rebuild      run ./mvnw package even when target/chibifs.jar is up to date (newer than pom.xml and
#                  everything under src/main), which it otherwise skips, saying "jar up to date"
set -euo pipefail

repo=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.." && pwd)
allow_other=false install=false uninstall=false build=true rebuild=false
for arg in "$@"; do
    case $arg in
        --allow-other) allow_other=true ;;
        --install) install=true ;;
        --uninstall) uninstall=true ;;
        --no-build) build=false ;;
        --rebuild) rebuild=true ;;
        -h | --help) awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "${BASH_SOURCE[0]}"; exit 0 ;;
        *) echo "provision.sh: unknown option '$arg' (try --help)" >&2; exit 2 ;;
    esac
done
if ! $build && $rebuild; then
    echo "provision.sh: --no-build and --rebuild contradict each other: give one" >&2
    exit 2
fi

# Root is needed only to change the system: ask for it (once, through sudo) when there is something to
# change, so the README's one set-up line works for root and users alike, and a user without sudo on a
# machine where everything is installed builds without it.
args=("$@")
as_root() {
    [[ $(id -u) -eq 0 ]] && return 0
    if command -v sudo >/dev/null; then
        exec sudo -- "$0" "${args[@]}"
    fi
    echo "provision.sh: $1 needs root, and there is no sudo here: ask an administrator to run" \
        "scripts/provision.sh${args[*]:+ ${args[*]}} as root (su -c '$0${args[*]:+ ${args[*]}}'), then run it again" >&2
    exit 2
}
if $install || $uninstall || $allow_other; then
    as_root "--install, --uninstall or --allow-other"
fi

# the docs too: the unit's Documentation= names them where every install has them, wherever the
# checkout is (it named /opt/chibifs, the Vagrant box's, which a checkout elsewhere made untrue)
installed_links=(/usr/local/bin/chibifs:scripts/chibifs /usr/local/bin/chibifs-wait-mounted:scripts/chibifs-wait-mounted
                 /sbin/mount.fuse.chibifs:scripts/mount.fuse.chibifs /usr/local/share/doc/chibifs:docs)
unit=/etc/systemd/system/chibifs@.service

if $uninstall; then
    for pair in "${installed_links[@]}"; do
        link=${pair%%:*}
        if [[ -L $link && $(readlink -- "$link") == "$repo/${pair#*:}" ]]; then
            rm -f -- "$link"
            echo "provision.sh: removed $link"
        elif [[ -e $link || -L $link ]]; then
            echo "provision.sh: kept $link: it is not a link into $repo"
        fi
    done
    if [[ -f $unit ]] && cmp -s "$unit" "$repo/packaging/systemd/chibifs@.service"; then
        rm -f -- "$unit"
        echo "provision.sh: removed $unit (running chibifs@ services keep running until stopped)"
        if [[ -d /run/systemd/system ]]; then
            systemctl daemon-reload
        fi
    elif [[ -f $unit ]]; then
        echo "provision.sh: kept $unit: it differs from this checkout's (edited, or another version)"
    fi
    echo "provision.sh: /etc/chibifs, the packages and every store are left as they are"
    exit 0
fi

# fuse3 for its setuid fusermount3, through which a user's daemon mounts (the daemon speaks the
# kernel's protocol itself: no libfuse; it replaces the fuse 2 package and keeps a fusermount
# link); the JDK to build and run it (below); the rest is what the tests, the benchmark and the operator
# tools call: git, sqlite3, python3, util-linux (findmnt, mountpoint), procps (ps, pgrep), psmisc
# (fuser), systemd for systemd-analyze (the package alone does not make systemd the init of a
# container), stress-ng for the stress test, bindfs, the C passthrough scripts/bench.sh compares,
# and fio, which times its data rows; and for the link tests (LinksMountTest) rsync, python3-venv (venv and its pip) and npm;
# curl, with which scripts/s3-loopback.sh and bench.sh wait for an S3 server (minimal Debian images lack it)
packages=(fuse3 attr git sqlite3 python3 python3-venv rsync util-linux procps psmisc systemd
          ca-certificates curl stress-ng bindfs fio)
missing=()
for p in "${packages[@]}"; do
    if [[ $(dpkg-query -W -f '${db:Status-Abbrev}' "$p" 2>/dev/null) != ii* ]]; then
        missing+=("$p")
    fi
done
# A JDK 17 or later builds and runs chibifs (the build targets 17). One on the PATH is kept; else
# the oldest such that apt knows: Debian 12 and Ubuntu 22.04 package 17, Debian 13 only 21 and 25,
# and a fresh machine's package lists may be empty until apt-get update.
jdk_major() {
    local v
    v=$(javac -version 2>&1) || return 1
    v=${v#javac }
    echo "${v%%[!0-9]*}"
}
jdk_usable() {
    local major
    major=$(jdk_major) && [[ -n $major && $major -ge 17 ]]
}
jdk_package() {
    local v
    for v in 17 21 25; do
        if [[ -n $(apt-cache show --no-all-versions "openjdk-$v-jdk-headless" 2>/dev/null) ]]; then
            echo "openjdk-$v-jdk-headless"
            return 0
        fi
    done
    return 1
}
updated=false
if ! jdk_usable; then
    as_root "installing a JDK 17 or later"
    if ! jdk=$(jdk_package); then
        apt-get update -q
        updated=true
        jdk=$(jdk_package) || {
            echo "provision.sh: apt offers no openjdk-17, -21 or -25-jdk-headless; install a JDK 17 or later and put its javac on the PATH" >&2
            exit 1
        }
    fi
    missing+=("$jdk")
fi
# npm only when no npm is on the PATH: a Node.js from elsewhere (NodeSource's nodejs bundles its own
# npm) conflicts with Debian's npm package
if ! command -v npm >/dev/null; then
    missing+=(npm)
fi
if [[ ${#missing[@]} -gt 0 ]]; then
    as_root "installing ${missing[*]}"
    echo "provision.sh: installing ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    $updated || apt-get update -q
    # --no-upgrade: provisioning adds what is missing; upgrading the rest is the operator's call
    apt-get install -y -q --no-install-recommends --no-upgrade "${missing[@]}"
else
    echo "provision.sh: packages present"
fi
if ! jdk_usable; then
    # installed, yet another javac comes first on the PATH (an older JDK chosen by hand)
    echo "provision.sh: javac on the PATH is $(javac -version 2>&1 || echo missing); chibifs needs a JDK 17 or later" \
        "(set JAVA_HOME, or: update-alternatives --config javac)" >&2
    exit 1
fi

# fusermount3 opens /dev/fuse as the user: udev's default rules make it 0666, a machine without
# udev (a container, a bare VM) keeps the kernel's 0600 and only root could mount
if [[ -c /dev/fuse && $(stat -c %a /dev/fuse) != 666 ]]; then
    as_root "making /dev/fuse 0666 (so that users may mount)"
    chmod 0666 /dev/fuse
    echo "provision.sh: made /dev/fuse 0666, as udev would"
fi

if $allow_other; then
    conf=/etc/fuse.conf
    if ! grep -qx '[[:space:]]*user_allow_other[[:space:]]*' "$conf" 2>/dev/null; then
        echo user_allow_other >>"$conf"
        echo "provision.sh: enabled user_allow_other in $conf"
    fi
fi

# Every command runs target/chibifs.jar: build it when it is missing or older than what it is made
# of, pom.xml and everything under src/main (a file added, removed or renamed there makes its
# directory newer too). The README runs this script in several of its blocks, and building each
# time cost minutes on a loaded machine for nothing; it also gave the jar a new inode, so the
# launcher's next command made a new copy of it and trained a new class archive (scripts/chibifs).
jar=$repo/target/chibifs.jar
jar_up_to_date() { # a find that fails (a directory it may not read) counts as out of date
    local newer
    [[ -f $jar ]] && newer=$(find "$repo/pom.xml" "$repo/src/main" -newer "$jar" -print -quit) && [[ -z $newer ]] \
        && grep -qaF 'picocli/CommandLine.class' "$jar" # whole: a build cut short leaves the jar without its libraries
}
if $build && ! $rebuild && jar_up_to_date; then
    echo "provision.sh: jar up to date (target/chibifs.jar; --rebuild builds it anyway)"
elif $build; then
    echo "provision.sh: building chibifs"
    # as the owner of the tree, so target/ and ~/.m2 do not end up root's in someone's checkout
    owner=$(stat -c %U "$repo")
    if [[ $(id -u) -eq 0 && $owner != root ]] && command -v runuser >/dev/null; then
        runuser -u "$owner" -- bash -c 'cd "$1" && ./mvnw -B -q -DskipTests package' _ "$repo"
    else
        (cd "$repo" && ./mvnw -B -q -DskipTests package)
    fi
fi

if $install; then
    # mount(8) looks for helpers in /sbin; on merged-/usr systems that is /usr/sbin, the same place
    for pair in "${installed_links[@]}"; do
        if [[ -d ${pair%%:*} && ! -L ${pair%%:*} ]]; then
            echo "provision.sh: kept ${pair%%:*}: a directory, not a link (ln would link inside it)"
            continue
        fi
        mkdir -p "$(dirname "${pair%%:*}")"
        ln -sfn "$repo/${pair#*:}" "${pair%%:*}"
        echo "provision.sh: linked ${pair%%:*} -> $repo/${pair#*:}"
    done
    if [[ -d /etc/systemd/system ]]; then
        install -m 0644 "$repo/packaging/systemd/chibifs@.service" "$unit"
        mkdir -p /etc/chibifs
        if [[ -d /run/systemd/system ]]; then
            systemctl daemon-reload
        fi
        echo "provision.sh: installed $unit (its settings go in /etc/chibifs)"
    fi
    echo "provision.sh: undo with scripts/provision.sh --uninstall"
fi
