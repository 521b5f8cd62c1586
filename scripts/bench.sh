#!/usr/bin/env bash
# chibifs benchmark: the same workloads, on the same disk, against three targets:
#   native  - the store directory itself
#   bindfs  - a C FUSE passthrough of it: bindfs --multithreaded -o big_writes,max_write=131072
#   chibifs - a per-context chibifs mount of the same store, working in /shared
#             (with --store s3://..., in /shared/s3, an S3 store mounted there: native and bindfs stay
#             the local reference, so the ratios say what S3 costs on top of the disk)
# Every workload runs --runs times per target, the targets in alternation; the table shows
# medians, the ratios of chibifs to the other two, and two verdicts (issue 23): against native,
# the physical limit (each row's own target), and against bindfs (chibifs at or below its time,
# at or above its throughput, on every row). Two rows have chibifs alone: the daemon's peak RSS
# and how long `chibifs mount` takes to return (issue 23: under 200 MiB, within 1 s). After the
# table: chibifs's requests per file (or per MiB, per read) and their mean latency for each row,
# from `chibifs stats`.
#
# Usage: scripts/bench.sh [--quick] [--runs N] [--dir DIR] [--chibifs-o OPTS] [--kernel-cache DURATION|off]
#                         [--no-settle] [--big] [--no-stats] [--store s3://BUCKET/PREFIX[?endpoint=URL]]
#                         [--io-uring]
#   --quick        small sizes (finishes in about two minutes)
#   --runs N       runs per workload and target (default 3, at least 3 for a fair median)
#   --dir DIR      where the store and the mountpoints go (default /var/tmp); one disk for all
#   --chibifs-o    extra FUSE options for the chibifs mount (e.g. attr_timeout=2)
#   --kernel-cache passed to chibifs mount (its default: 30s, long kernel timeouts with the store followed,
#                  on Linux 6.2 and later; off before, libfuse's 1 s)
#   --no-settle    time small-create and tar-xf without first writing back and dropping the clean
#                  page cache (how runs before 2026-11-24 were made; see settle below)
#   --big          also a directory of 100,000 files (20,000 with --quick): create, ls -l, rm -r
#   --no-stats     do not ask the daemon for its request counts around each chibifs workload
#   --io-uring     mount chibifs with --io-uring (FUSE over io_uring; needs Linux 6.14+ and
#                  /sys/module/fuse/parameters/enable_uring on, which this script does not turn on)
#   --store SPEC   chibifs works in /shared/s3, mounted with --store /shared/s3=SPEC (an S3 store, see
#                  docs/s3-store.md). Without ?endpoint= (and no AWS_ENDPOINT_URL_S3/AWS_ENDPOINT_URL),
#                  scripts/s3-loopback.sh serves BUCKET from the work dir on 127.0.0.1 for the run,
#                  with the tests' credentials unless AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY are set
# Environment: CHIBIFS_JAVA_OPTS reaches the daemon's JVM through scripts/chibifs.
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
quick=0
runs=3
base_parent=/var/tmp
chibifs_o=""
kernel_cache=""
settle_creates=1
big=0
want_stats=1
store_spec=""
io_uring=0

usage() { sed -n '2,/^# Environment/p' "$0" | sed 's/^# \{0,1\}//'; }

while [ $# -gt 0 ]; do
    case "$1" in
        --quick) quick=1 ;;
        --runs) runs=${2:?--runs needs a number}; shift ;;
        --dir) base_parent=${2:?--dir needs a directory}; shift ;;
        --chibifs-o) chibifs_o=${2:?--chibifs-o needs options}; shift ;;
        --kernel-cache) kernel_cache=${2:?--kernel-cache needs a duration or off}; shift ;;
        --no-settle) settle_creates=0 ;;
        --big) big=1 ;;
        --no-stats) want_stats=0 ;;
        --store) store_spec=${2:?--store needs s3://BUCKET/PREFIX}; shift ;;
        --io-uring) io_uring=1 ;;
        -h|--help) usage; exit 0 ;;
        *) echo "bench.sh: unknown argument '$1' (try --help)" >&2; exit 2 ;;
    esac
    shift
done
case "$runs" in
    ''|*[!0-9]*) echo "bench.sh: --runs '$runs' is not a number" >&2; exit 2 ;;
esac
case "$store_spec" in
    ''|s3://?*/?*) ;;
    *) echo "bench.sh: --store '$store_spec': expected s3://BUCKET/PREFIX[?endpoint=URL&region=R]" >&2; exit 2 ;;
esac
if [ "$io_uring" = 1 ] && [ "$(cat /sys/module/fuse/parameters/enable_uring 2>/dev/null)" != Y ]; then
    echo "bench.sh: --io-uring: the kernel does not offer FUSE over io_uring (Linux 6.14+, and as root:" \
        "echo 1 > /sys/module/fuse/parameters/enable_uring)" >&2
    exit 2
fi
if [ "$runs" -lt 3 ]; then
    echo "bench.sh: --runs $runs: at least 3 runs are needed for a median worth reading" >&2
    exit 2
fi

# ---- prerequisites ----
missing=()
for tool in fio bindfs git tar grep awk java pgrep $([ -n "$store_spec" ] && echo curl); do
    command -v "$tool" >/dev/null 2>&1 || missing+=("$tool")
done
# chibifs mounts without libfuse; bindfs (which brings its own libfuse 2) unmounts with either helper
fusermount=$(command -v fusermount3 || command -v fusermount || true)
[ -n "$fusermount" ] || missing+=(fusermount3)
if [ ${#missing[@]} -gt 0 ]; then
    echo "bench.sh: missing: ${missing[*]}" >&2
    echo "  install with: apt-get install fio bindfs fuse3 git tar grep gawk procps openjdk-17-jre-headless" >&2
    exit 1
fi
if [ ! -e /dev/fuse ]; then
    echo "bench.sh: /dev/fuse is missing: load the fuse module (modprobe fuse) or run where FUSE works" >&2
    exit 1
fi

if [ "$quick" = 1 ]; then
    seq_mib=128; rand_mib=32; rand_secs=2; small_n=1000; tree_src=/usr/include/linux; big_n=20000
else
    seq_mib=1024; rand_mib=256; rand_secs=10; small_n=5000; tree_src=/usr/include; big_n=100000
fi
if [ ! -d "$tree_src" ]; then
    echo "bench.sh: $tree_src is missing: the tar/grep/git workloads need a source tree (apt-get install libc6-dev linux-libc-dev)" >&2
    exit 1
fi

jar="$here/target/chibifs.jar"
if [ ! -f "$jar" ]; then
    echo "bench.sh: building $jar ..." >&2
    (cd "$here" && ./mvnw -q -B -DskipTests package) >&2
fi

# ---- the three targets, on one disk ----
base=$(mktemp -d "$base_parent/chibifs-bench.XXXXXX")
home="$base/home"
store="$home/vfs"
mnt_chibi="$base/mnt-chibifs"
mnt_bind="$base/mnt-bindfs"
mnt_time="$base/mnt-time"
mkdir -p "$mnt_chibi" "$mnt_bind" "$mnt_time"
daemon_pid=""
s3_pid=""

cleanup() {
    set +e
    cd /
    for m in "$mnt_chibi" "$mnt_bind" "$mnt_time"; do
        if grep -q " $m " /proc/mounts; then
            "$fusermount" -u -z "$m" 2>/dev/null || umount -l "$m" 2>/dev/null
        fi
    done
    if [ -n "$daemon_pid" ]; then
        for _ in 1 2 3 4 5 6 7 8 9 10; do
            kill -0 "$daemon_pid" 2>/dev/null || break
            sleep 0.2
        done
        kill "$daemon_pid" 2>/dev/null
    fi
    if [ -n "$s3_pid" ]; then
        # after the daemon: it uploads what is pending before it exits; s3-loopback.sh stops s3proxy
        for _ in $(seq 1 50); do
            [ -n "$daemon_pid" ] && kill -0 "$daemon_pid" 2>/dev/null || break
            sleep 0.2
        done
        kill "$s3_pid" 2>/dev/null
        wait "$s3_pid" 2>/dev/null
    fi
    rm -rf "$base"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# ---- the S3 store (--store): on loopback unless an endpoint is named ----
store_args=()
store_desc="local ($store)"
chibifs_sub=shared
if [ -n "$store_spec" ]; then
    s3_where="the endpoint it names"
    if [[ "$store_spec" != *endpoint=* ]] && [ -z "${AWS_ENDPOINT_URL_S3:-}${AWS_ENDPOINT_URL:-}" ]; then
        bucket=${store_spec#s3://}
        bucket=${bucket%%/*}
        export AWS_ACCESS_KEY_ID=${AWS_ACCESS_KEY_ID:-chibi-test}
        export AWS_SECRET_ACCESS_KEY=${AWS_SECRET_ACCESS_KEY:-chibi-test-secret}
        export AWS_REGION=${AWS_REGION:-us-east-1}
        s3_ready="$base/s3-endpoint"
        "$here/scripts/s3-loopback.sh" --bucket "$bucket" --ready-file "$s3_ready" "$base/s3" \
            > "$base/s3-loopback.out" 2>&1 &
        s3_pid=$!
        deadline=$((SECONDS + 120)) # a first run resolves s3proxy's class path with Maven
        until [ -s "$s3_ready" ]; do
            if ! kill -0 "$s3_pid" 2>/dev/null || [ "$SECONDS" -ge "$deadline" ]; then
                echo "bench.sh: the loopback S3 server did not start:" >&2
                cat "$base/s3-loopback.out" >&2
                exit 1
            fi
            sleep 0.1
        done
        s3_endpoint=$(cat "$s3_ready")
        store_spec="$store_spec$([[ "$store_spec" == *\?* ]] && echo '&' || echo '?')endpoint=$s3_endpoint"
        s3_where="s3proxy $(tr ':' '\n' < "$here/target/s3proxy.classpath" \
            | sed -n 's|.*/s3proxy-\([^/]*\)\.jar$|\1|p') on loopback, file-system backend in $base/s3 (same disk)"
    fi
    store_args=(--store "/shared/s3=$store_spec")
    store_desc="S3, /shared/s3=$store_spec ($s3_where); cache dir $home/chibifs/cache"
    chibifs_sub=shared/s3
fi

mount_out=$("$here/scripts/chibifs" mount --context bench --home "$home" "${store_args[@]}" \
    ${chibifs_o:+-o "$chibifs_o"} ${kernel_cache:+--kernel-cache "$kernel_cache"} \
    $([ "$io_uring" = 1 ] && echo --io-uring) "$mnt_chibi")
daemon_pid=$(printf '%s\n' "$mount_out" | sed -n 's/.*daemon pid \([0-9][0-9]*\).*/\1/p')
if [ -z "$daemon_pid" ]; then
    daemon_pid=$(pgrep -f -- "mount --foreground .* $mnt_chibi\$" | head -1 || true)
fi
if [ -z "$daemon_pid" ] || [ ! -r "/proc/$daemon_pid/status" ]; then
    echo "bench.sh: cannot find the chibifs daemon's pid (mount said: $mount_out)" >&2
    exit 1
fi
bindfs --multithreaded -o big_writes,max_write=131072 "$store" "$mnt_bind"


targets=(native bindfs chibifs)
declare -A dir=(
    [native]="$store/shared/native"
    [bindfs]="$mnt_bind/shared/bindfs"
    [chibifs]="$mnt_chibi/$chibifs_sub/chibifs"
)
for t in "${targets[@]}"; do
    mkdir "${dir[$t]}"
done

can_drop=0
if [ -w /proc/sys/vm/drop_caches ] && (sync && echo 3 > /proc/sys/vm/drop_caches) 2>/dev/null; then
    can_drop=1
fi
drop_caches() {
    if [ "$can_drop" = 1 ]; then
        sync
        echo 3 > /proc/sys/vm/drop_caches
    fi
}
# On ext4 without a journal, a create passes over every inode number freed in the last 60 s (360 s
# while its inode-table block is unwritten) whose block is still cached, one by one from the start
# of the group (recently_deleted() in fs/ext4/ialloc.c). Every target here creates in the same
# groups, so one target's deletes landed on the next one's creates, more with every round: on this
# project's machine tar xf of the native directory went 0.87, 2.85, 3.22 s over three rounds, and
# the medians ranked the targets by their place in the rotation. So before each create-heavy
# workload the metadata is written back and the clean cache dropped: ext4 looks only at cached
# blocks for those times, and every target starts from the same disk. Elsewhere it costs a sync.
settle() {
    if [ "$settle_creates" = 1 ]; then
        sync
        if [ "$can_drop" = 1 ]; then
            echo 1 > /proc/sys/vm/drop_caches
        fi
    fi
}

tarball="$base/tree.tar"
# -h: chibifs refuses symbolic links (by design), so the tree carries their targets instead
tar chf "$tarball" -C "$(dirname "$tree_src")" "$(basename "$tree_src")" 2>/dev/null
tree_files=$(tar tf "$tarball" | grep -vc '/$' || true)
small_payload=$(head -c 1024 /dev/zero | tr '\0' 'x')

echo "chibifs benchmark ($([ "$quick" = 1 ] && echo quick || echo full), $runs runs per target, in alternation)"
echo "  work dir $base on $(df --output=source "$base" | tail -1)"
daemon_log=$(printf '%s\n' "$mount_out" | sed -n 's/.*, log \(.*\)$/\1/p')
echo "  chibifs daemon pid $daemon_pid; JVM: launcher defaults${CHIBIFS_JAVA_OPTS:+, then $CHIBIFS_JAVA_OPTS}"
echo "  chibifs store: $store_desc"
echo "  chibifs options: $(sed -n 's/.*; options \([^;]*\);.*/\1/p' "$daemon_log" 2>/dev/null | tail -1)"
echo "  chibifs session: $(sed -n 's/.*; \(FUSE 7[^;]*\);.*/\1/p' "$daemon_log" 2>/dev/null | tail -1)"
echo "  cold reads: $([ "$can_drop" = 1 ] && echo 'page cache dropped before each' \
    || echo 'NOT cold: dropping caches is not permitted here (needs root and a writable /proc/sys/vm/drop_caches)')"
if [ -r /sys/module/haltpoll/parameters/guest_halt_poll_ns ]; then
    # a VM whose idle vCPUs halt at once pays a VM exit per wake-up: the small-file rows measure it
    echo "  guest halt polling: $(cat /sys/module/haltpoll/parameters/guest_halt_poll_ns) ns (0: idle vCPUs halt at once)"
fi
echo "  creates: $(if [ "$settle_creates" = 0 ]; then echo 'not settled (--no-settle)'
    elif [ "$can_drop" = 1 ]; then echo 'settled: sync and clean page cache dropped before small-create and tar-xf'
    else echo 'sync before small-create and tar-xf; clean cache NOT dropped (not permitted here)'; fi)"
echo

# ---- measurement ----
declare -A results   # "workload|target" -> space-separated values
record() { results["$1|$2"]="${results["$1|$2"]:-} $3"; }

now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.4f", b - a }'; }

# ---- the daemon's request counts (chibifs stats), around each chibifs workload, outside its time ----
stats_log="$base/requests.txt" # lines: workload opcode requests total-us
: > "$stats_log"
# prints "OPCODE requests total-us" per opcode served so far (from the daemon's JSON snapshot)
stats_now() { "$here/scripts/chibifs" stats --json "$mnt_chibi" 2>/dev/null | awk -F'"' '
    $2 == "opcode" { op = $4 } $2 == "count" { n = $3 } $2 == "totalMicros" { us = $3 }
    $2 == "mostAtOnce" { gsub(/[^0-9]/, "", n); gsub(/[^0-9]/, "", us); print op, n, us }'; }
stats_before=""
stats_mark() {
    if [ "$want_stats" = 1 ] && [ "$1" = chibifs ]; then stats_before=$(stats_now); fi
}
# appends what the daemon served since stats_mark to the log, under workload $1
stats_take() {
    if [ "$want_stats" = 1 ] && [ "$2" = chibifs ]; then
        awk -v w="$1" 'NR == FNR { c[$1] = $2; us[$1] = $3; next }
            { d = $2 - c[$1]; if (d > 0) printf "%s %s %d %d\n", w, $1, d, $3 - us[$1] }' \
            <(printf '%s\n' "$stats_before") <(stats_now) >> "$stats_log"
    fi
}

# times "$@" in seconds, records it under workload $1 for target $2
timed() {
    local w=$1 t=$2; shift 2
    local t0 t1
    stats_mark "$t"
    t0=$(now)
    "$@"
    t1=$(now)
    stats_take "$w" "$t"
    record "$w" "$t" "$(elapsed "$t0" "$t1")"
}

fio_run() {
    fio --name=bench --ioengine=psync --invalidate=0 --output-format=terse --terse-version=3 "$@"
}

# fio reports bandwidth in KiB/s (field 7 read, 48 write) and IOPS (8 read); startup is not counted
seq_round() {
    local t=$1 f="${dir[$1]}/seq.bin" line
    stats_mark "$t"
    line=$(fio_run --filename="$f" --rw=write --bs=1M --size="${seq_mib}M" --end_fsync=1)
    stats_take seq-write "$t"
    record seq-write "$t" "$(printf '%s' "$line" | awk -F';' '{printf "%.1f", $48 / 1024}')"
    drop_caches
    stats_mark "$t"
    line=$(fio_run --filename="$f" --rw=read --bs=1M --size="${seq_mib}M")
    stats_take seq-read-cold "$t"
    record seq-read-cold "$t" "$(printf '%s' "$line" | awk -F';' '{printf "%.1f", $7 / 1024}')"
    stats_mark "$t"
    line=$(fio_run --filename="$f" --rw=read --bs=1M --size="${seq_mib}M")
    stats_take seq-read-warm "$t"
    record seq-read-warm "$t" "$(printf '%s' "$line" | awk -F';' '{printf "%.1f", $7 / 1024}')"
    rm -f "$f"
}

rand_reads=0
rand_setup() {
    fio_run --filename="${dir[$1]}/rand.bin" --rw=write --bs=1M --size="${rand_mib}M" >/dev/null
}

rand_round() {
    local t=$1 line
    stats_mark "$t"
    line=$(fio_run --filename="${dir[$t]}/rand.bin" --rw=randread --bs=4k --size="${rand_mib}M" \
        --time_based --runtime="$rand_secs")
    stats_take rand-read-4k "$t"
    record rand-read-4k "$t" "$(printf '%s' "$line" | awk -F';' '{printf "%.0f", $8}')"
    # the reads it made (field 6: KiB read), to give the requests per read
    [ "$t" = chibifs ] && rand_reads=$((rand_reads + $(printf '%s' "$line" | awk -F';' '{printf "%d", $6 / 4}')))
    return 0
}

small_create() {
    local d=$1 i
    for ((i = 0; i < small_n; i++)); do
        printf '%s\n' "$small_payload" > "$d/f$i"
    done
}
small_stat() { find "$1" -type f -printf '%s %T@\n' > /dev/null; }
small_read() { find "$1" -type f -exec cat {} + > /dev/null; }
small_delete() { find "$1" -type f -delete; }

small_round() {
    local t=$1 d="${dir[$1]}/small"
    mkdir "$d"
    settle
    timed small-create "$t" small_create "$d"
    timed small-stat "$t" small_stat "$d"
    timed small-read "$t" small_read "$d"
    timed small-delete "$t" small_delete "$d"
    rmdir "$d"
}

git_q() {
    git -c safe.directory='*' -c gc.auto=0 -c user.name=bench -c user.email=bench@localhost \
        -c init.defaultBranch=main -C "$1" "${@:2}"
}
tree_untar() { tar xf "$tarball" -C "$1"; }
tree_grep() { grep -r -c 'define' "$1" > /dev/null || true; }
tree_commit() { git_q "$1" add -A && git_q "$1" commit -q -m bench; }
tree_status() { git_q "$1" status --porcelain > /dev/null; }
tree_remove() { rm -rf "$1"; }

tree_round() {
    local t=$1 d="${dir[$1]}/tree"
    mkdir "$d"
    settle
    cat "$tarball" > /dev/null # read back into the cache, as every earlier round found it
    timed tar-xf "$t" tree_untar "$d"
    timed grep-r "$t" tree_grep "$d"
    # the same again: what an agent's second search (or Python's imports) costs, files unchanged
    timed grep-r-again "$t" tree_grep "$d"
    git_q "$d" init -q
    timed git-add-commit "$t" tree_commit "$d"
    timed git-status "$t" tree_status "$d"
    timed rm-r "$t" tree_remove "$d"
}

# a directory of $big_n files: the daemon's memory for that many names, and listing and removing it
big_create() {
    local d=$1 i
    for ((i = 0; i < big_n; i++)); do
        : > "$d/f$i"
    done
}
big_list() { ls -l "$1" > /dev/null; }
big_remove() { rm -r "$1"; }

big_round() {
    local t=$1 d="${dir[$1]}/big"
    mkdir "$d"
    settle
    timed big-create "$t" big_create "$d"
    timed big-ls-l "$t" big_list "$d"
    timed big-rm-r "$t" big_remove "$d"
}

# one round visits the targets in a rotated order, so no target always goes first
alternate() {
    local fn=$1 r i
    for ((r = 0; r < runs; r++)); do
        for ((i = 0; i < 3; i++)); do
            "$fn" "${targets[$(((r + i) % 3))]}"
        done
    done
}

progress() { echo "  ... $*" >&2; }

# issue 23: `mount` returns within 1 s of being run. Timed after the first mount above, which made
# the launcher's copy of the jar and its class archive; each of --runs mounts of a home of its own,
# then its umount (not timed)
mount_times=""
for ((i = 0; i < runs; i++)); do
    t0=$(now)
    "$here/scripts/chibifs" mount --context bench --home "$base/home-time" "$mnt_time" > /dev/null
    t1=$(now)
    "$here/scripts/chibifs" umount "$mnt_time" > /dev/null
    mount_times="$mount_times $(elapsed "$t0" "$t1")"
done

progress "sequential write/read (${seq_mib} MiB)"
alternate seq_round
progress "random 4 KiB reads (${rand_mib} MiB file, ${rand_secs} s each)"
for t in "${targets[@]}"; do rand_setup "$t"; done
alternate rand_round
for t in "${targets[@]}"; do rm -f "${dir[$t]}/rand.bin"; done
progress "small files ($small_n)"
alternate small_round
progress "source tree ($tree_src, $tree_files files): tar xf, grep -r, git"
alternate tree_round
if [ "$big" = 1 ]; then
    progress "a directory of $big_n files: create, ls -l, rm -r"
    alternate big_round
fi

rss_kib=$(awk '/^VmHWM:/ {print $2}' "/proc/$daemon_pid/status")

# ---- report ----
median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{v[NR] = $1} END {
    if (NR % 2) printf "%s", v[(NR + 1) / 2]; else printf "%.4f", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

# workload | unit | kind (thr: higher is better, time: lower is better) | target on chibifs/native |
# target on chibifs/bindfs (issue 23: at or below bindfs's time, at or above its throughput, on every row)
rows=(
    "seq-write|MiB/s|thr|>=0.9|>=1.0"
    "seq-read-cold|MiB/s|thr|>=0.9|>=1.0"
    "seq-read-warm|MiB/s|thr|>=0.95|>=1.0"
    "rand-read-4k|IOPS|thr|>=0.95|>=1.0"
    "small-create|s|time|<=2.0|<=1.0"
    "small-stat|s|time|<=2.0|<=1.0"
    "small-read|s|time|<=2.0|<=1.0"
    "small-delete|s|time|-|<=1.0"
    "tar-xf|s|time|<=3.0|<=1.0"
    "grep-r|s|time|<=3.0|<=1.0"
    "grep-r-again|s|time|-|<=1.0"
    "git-add-commit|s|time|-|<=1.0"
    "git-status|s|time|<=1.5|<=1.0"
    "rm-r|s|time|<=3.0|<=1.0"
)
if [ "$big" = 1 ]; then
    rows+=(
        "big-create|s|time|<=3.0|<=1.0"
        "big-ls-l|s|time|<=3.0|<=1.0"
        "big-rm-r|s|time|<=3.0|<=1.0"
    )
fi
# PASS or FAIL of ratio $1 against goal $2 (">=0.9", "<=2.0"; "-": info)
judge() { awk -v r="$1" -v g="$2" 'BEGIN {
    if (g == "-") { print "info"; exit }
    op = substr(g, 1, 2); v = substr(g, 3) + 0
    print ((op == ">=" && r >= v) || (op == "<=" && r <= v)) ? "PASS" : "FAIL" }'; }
# "firm" when every pairing of one chibifs sample with one reference sample gives the same verdict
# against goal $3; "close" when some pairing turns it (one more run could): samples $1 (reference), $2 (chibifs)
firmness() { awk -v a="$1" -v b="$2" -v g="$3" '
    function range(s, r,   v, n, i) { n = split(s, v, " "); r["lo"] = r["hi"] = v[1] + 0
        for (i = 2; i <= n; i++) { if (v[i] + 0 < r["lo"]) r["lo"] = v[i] + 0; if (v[i] + 0 > r["hi"]) r["hi"] = v[i] + 0 } }
    function ok(r) { return (op == ">=" && r >= v) || (op == "<=" && r <= v) }
    BEGIN { if (g == "-") { print "-"; exit }
        op = substr(g, 1, 2); v = substr(g, 3) + 0; range(a, x); range(b, y)
        if (x["lo"] <= 0 || x["hi"] <= 0) { print "-"; exit }
        print (ok(y["lo"] / x["hi"]) == ok(y["hi"] / x["lo"])) ? "firm" : "close" }'; }
# the widest spread of one target's samples, (max - min) / median, in percent
noise() { for s in "$@"; do tr ' ' '\n' <<< "$s" | grep -v '^$' | sort -g | awk '{ v[NR] = $1 } END {
    m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
    if (m > 0) printf "%.0f\n", 100 * (v[NR] - v[1]) / m }'; done | sort -n | tail -1; }
fails_native=0
fails_bindfs=0
close_fails=0
row_format='%-15s %-5s %10s %10s %10s  %-11s %-6s %-10s  %-11s %-6s %-10s %s\n'
printf "$row_format" workload unit native bindfs chibifs \
    "chib/native" target verdict "chib/bindfs" target verdict noise
for row in "${rows[@]}"; do
    IFS='|' read -r w unit kind goal_n goal_b <<< "$row"
    n=$(median <<< "${results["$w|native"]}")
    b=$(median <<< "${results["$w|bindfs"]}")
    c=$(median <<< "${results["$w|chibifs"]}")
    rn=$(awk -v c="$c" -v o="$n" 'BEGIN { printf "%.2f", (o > 0 ? c / o : 0) }')
    rb=$(awk -v c="$c" -v o="$b" 'BEGIN { printf "%.2f", (o > 0 ? c / o : 0) }')
    vn=$(judge "$rn" "$goal_n")
    vb=$(judge "$rb" "$goal_b")
    fn=$(firmness "${results["$w|native"]}" "${results["$w|chibifs"]}" "$goal_n")
    fb=$(firmness "${results["$w|bindfs"]}" "${results["$w|chibifs"]}" "$goal_b")
    if [ "$vn" = FAIL ]; then fails_native=$((fails_native + 1)); [ "$fn" = close ] && close_fails=$((close_fails + 1)); fi
    if [ "$vb" = FAIL ]; then fails_bindfs=$((fails_bindfs + 1)); [ "$fb" = close ] && close_fails=$((close_fails + 1)); fi
    [ "$fn" = close ] && vn="$vn?"
    [ "$fb" = close ] && vb="$vb?"
    spread=$(noise "${results["$w|native"]}" "${results["$w|bindfs"]}" "${results["$w|chibifs"]}")
    printf "$row_format" "$w" "$unit" "$n" "$b" "$c" \
        "${rn}x $kind" "$goal_n" "$vn" "${rb}x $kind" "$goal_b" "$vb" "${spread:-?}%"
done
rss_mib=$(awk -v k="$rss_kib" 'BEGIN { printf "%.0f", k / 1024 }')
rss_verdict=$([ "$rss_mib" -lt 200 ] && echo PASS || echo FAIL)
[ "$rss_verdict" = FAIL ] && fails_native=$((fails_native + 1))
printf "$row_format" daemon-peak-rss MiB - - "$rss_mib" - "<200" "$rss_verdict" - - - -
mount_s=$(printf '%s' "$mount_times" | median)
mount_verdict=$(awk -v m="$mount_s" 'BEGIN { print (m <= 1.0 ? "PASS" : "FAIL") }')
[ "$mount_verdict" = FAIL ] && fails_native=$((fails_native + 1))
printf "$row_format" mount-time s - - "$mount_s" - "<=1.0" "$mount_verdict" - - - -
echo
echo "thr = throughput ratio (higher is better); time = time ratio (lower is better); medians of $runs runs."
echo "verdicts: PASS/FAIL against the target on that ratio (issue 23); a '?' when the samples let some pairing of"
echo "  one chibifs run with one reference run fall on the other side (close: one more run could turn it)."
echo "noise: the widest spread of one target's samples on that row, (max - min) / median."
echo "daemon-peak-rss: VmHWM of the daemon after every workload$([ "$big" = 1 ] && echo ", the $big_n-file directory included")."
echo "mount-time: how long \`chibifs mount\` took to return, median of $runs mounts (samples:$mount_times)."
# the samples behind each median: a verdict that a spread this wide could flip deserves more --runs
echo "samples in run order (native | bindfs | chibifs):"
for row in "${rows[@]}"; do
    IFS='|' read -r w unit kind goal_n goal_b <<< "$row"
    printf '  %-15s%s |%s |%s\n' "$w" "${results["$w|native"]}" "${results["$w|bindfs"]}" "${results["$w|chibifs"]}"
done
echo "targets missed: $fails_native against native, $fails_bindfs against bindfs$([ "$close_fails" -gt 0 ] \
    && echo "; $close_fails of these with samples that one more run could turn (take more --runs before believing those)")."

if [ "$want_stats" = 1 ]; then
    echo
    if [ ! -s "$stats_log" ]; then
        echo "chibifs requests: none recorded ('chibifs stats $mnt_chibi' did not answer)"
    else
        # what one file (one MiB, one read) of each row cost in requests, summed over the runs
        declare -A per=(
            [seq-write]="$((seq_mib * runs)) MiB" [seq-read-cold]="$((seq_mib * runs)) MiB"
            [seq-read-warm]="$((seq_mib * runs)) MiB" [rand-read-4k]="$rand_reads read"
            [small-create]="$((small_n * runs)) file" [small-stat]="$((small_n * runs)) file"
            [small-read]="$((small_n * runs)) file" [small-delete]="$((small_n * runs)) file"
            [tar-xf]="$((tree_files * runs)) file" [grep-r]="$((tree_files * runs)) file"
            [grep-r-again]="$((tree_files * runs)) file"
            [git-add-commit]="$((tree_files * runs)) file" [git-status]="$((tree_files * runs)) file"
            [rm-r]="$((tree_files * runs)) file" [big-create]="$((big_n * runs)) file"
            [big-ls-l]="$((big_n * runs)) file" [big-rm-r]="$((big_n * runs)) file"
        )
        echo "chibifs requests per unit of work (chibifs stats, summed over the $runs runs): opcode count/unit (mean us)"
        for row in "${rows[@]}"; do
            IFS='|' read -r w _ <<< "$row"
            read -r units unit <<< "${per[$w]:-1 run}"
            ops=$(awk -v w="$w" -v n="$units" '$1 == w { c[$2] += $3; us[$2] += $4 } BEGIN { if (n <= 0) n = 1 }
                END { for (op in c) printf "%s %.2f (%.0f us)\n", op, c[op] / n, us[op] / c[op] }' "$stats_log" \
                | sort -k2,2gr | tr '\n' ' ')
            awk -v w="$w" -v n="$units" -v u="$unit" -v ops="$ops" '$1 == w { t += $3; tus += $4 } BEGIN { if (n <= 0) n = 1 }
                END { printf "  %-15s %6.2f req/%s, %7.1f us/%s: %s\n", w, t / n, u, tus / n, u, ops }' "$stats_log"
        done
    fi
fi
if [ "$quick" = 1 ]; then
    # --quick's phases are short: the JIT of a fresh daemon is still compiling what each one runs through
    echo "quick: a smoke run on a fresh daemon, whose JIT is still compiling; judge the targets on a full run."
fi
