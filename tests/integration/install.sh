#!/usr/bin/env bash
# Install like a Debian tool: `cmake --install` into a temporary prefix, the prefix
# copied elsewhere (cp -a) and the original removed, then from the copy only (PATH=<copy>/bin):
#   - the README's "What you do with it" examples, extracted from README.md mechanically; each
#     extracted command must match a rule below (run as written / run with a stated change /
#     skipped with a stated reason), so an example added to the README without a rule fails here
#   - the man pages render (man -l, and MANPATH=<copy>/share/man man thpemu)
#   - a policy plugin compiles with `pkg-config --cflags thpemu` alone and loads in thpemu sim
#   - nothing installed refers to the build directory (RUNPATH, ldd), and a managed program maps
#     libthpemu.so from the copy
. "$(dirname "$0")/lib.sh"

need_cmd cmake
need_cmd pkg-config
need_cmd man
command -v help2man >/dev/null || skip "help2man not installed (no man pages built; package help2man)"
[ -f "$THPEMU_BUILD_DIR/man/stamp" ] ||
	fail "help2man is installed but $THPEMU_BUILD_DIR/man was not made (configured before help2man was installed, or a sanitizer build: re-run cmake)"

inst="$T_TMP/inst" copy="$T_TMP/moved/prefix"
cmake --install "$THPEMU_BUILD_DIR" --prefix "$inst" >"$T_OUT/install.log" 2>&1 ||
	fail "cmake --install failed: $(tail -3 "$T_OUT/install.log")"
mkdir -p "$(dirname "$copy")"
cp -a "$inst" "$copy"
rm -rf "$inst"
for f in bin/thpemu bin/thpemu-fusedev bin/thpemu-replayer bin/usemem lib/thpemu/libthpemu.so \
	include/thpemu/thpemu.h include/thpemu/thpemu_policy.h share/pkgconfig/thpemu.pc \
	share/man/man1/thpemu.1 share/man/man1/thpemu-run.1 share/man/man1/usemem.1 \
	share/man/man1/thpemu-fusedev.1 share/man/man1/thpemu-replayer.1; do
	[ -e "$copy/$f" ] || fail "installed tree lacks $f"
done
ls "$copy"/lib/thpemu/plugins/*.so >/dev/null 2>&1 || fail "no plugins in lib/thpemu/plugins"
export PATH="$copy/bin:$PATH"
[ "$(command -v thpemu)" = "$copy/bin/thpemu" ] || fail "PATH does not pick the copy's thpemu"

# --- no program or library of the build tree has an empty RUNPATH entry: the loader reads one
# as the current directory, where a file of anyone's would be loaded into it (CMake pads a build
# RUNPATH with them unless told not to: cmake/install.cmake)
for f in "$THPEMU_BUILD_DIR"/thpemu "$THPEMU_BUILD_DIR"/thpemu-* "$THPEMU_BUILD_DIR"/usemem \
	"$THPEMU_BUILD_DIR"/libthpemu*.so; do
	[ -f "$f" ] && [ -x "$f" ] || continue
	rp=$(readelf -d "$f" | sed -n 's/.*R\(UN\)*PATH.*\[\(.*\)\]$/\2/p')
	case ":$rp:" in *::*) [ -z "$rp" ] || fail "$f: an empty RUNPATH entry ($rp)" ;; esac
done

# --- nothing points back at the build tree or the removed install
for f in "$copy"/bin/* "$copy"/lib/thpemu/libthpemu.so; do
	rp=$(readelf -d "$f" | grep -E 'RUNPATH|RPATH' || true)
	# the preload needs system libraries only: a RUNPATH would cost every managed process a
	# search of its directories (cmake/install.cmake)
	if [ "${f##*/}" = libthpemu.so ]; then
		[ -z "$rp" ] || fail "$f: a RUNPATH ($rp)"
	else
		case "$rp" in *'$ORIGIN'*) ;; *) fail "$f: no \$ORIGIN RUNPATH ($rp)" ;; esac
	fi
	case "$rp" in *"$THPEMU_BUILD_DIR"* | *"$inst"*) fail "$f: RUNPATH names $rp" ;; esac
	if ldd "$f" | grep -E "$THPEMU_BUILD_DIR|$inst|not found"; then
		fail "$f: ldd resolves a library from the build tree / old prefix, or not at all"
	fi
done
# (debug info names the build directory, as any -g build does; what the program reads must not)
for sec in .rodata .dynstr; do
	readelf -p "$sec" "$copy/bin/thpemu" 2>/dev/null | grep -F "$THPEMU_BUILD_DIR" &&
		fail "thpemu's $sec embeds the build path"
done
for p in thpemu thpemu-fusedev thpemu-replayer usemem; do
	v=$("$p" --version) || fail "$p --version failed"
	case "$v" in *" $(thpemu --version | awk '{print $2}')") ;; *) fail "$p --version: '$v'" ;; esac
done

# --- man pages
export MANWIDTH=100
for m in "$copy"/share/man/man1/*.1; do
	man -l "$m" >"$T_TMP/page.txt" 2>"$T_TMP/man.err" || fail "man -l $m: $(cat "$T_TMP/man.err")"
	grep -q '^OPTIONS\|^DESCRIPTION' "$T_TMP/page.txt" || fail "$m renders without a description"
	[ -s "$T_TMP/man.err" ] && fail "man -l $m warns: $(head -2 "$T_TMP/man.err")"
done
MANPATH="$copy/share/man" man -P cat thpemu >"$T_OUT/man-thpemu.txt" 2>&1 || fail "man thpemu failed"
grep -q '^NAME' "$T_OUT/man-thpemu.txt" && grep -q 'thpemu-run(1)' "$T_OUT/man-thpemu.txt" ||
	fail "man thpemu: no NAME or no SEE ALSO thpemu-run(1)"
MANPATH="$copy/share/man" man -P cat thpemu-run | grep -q -- '--policy' || fail "man thpemu-run lacks --policy"
say "man pages: $(ls "$copy"/share/man/man1 | wc -l) render"

# --- a policy plugin compiled against the installed headers only
cflags=$(PKG_CONFIG_PATH="$copy/share/pkgconfig" pkg-config --cflags thpemu) || fail "pkg-config thpemu"
case "$cflags" in *"$copy"*) ;; *) fail "pkg-config --cflags '$cflags' does not point into the copy" ;; esac
cc -shared -fPIC -Wall -Werror $cflags -o "$T_TMP/mthp.so" \
	"$THPEMU_SOURCE_DIR/demo/plugins/mthp_under_frag.c" 2>"$T_TMP/cc.err" ||
	fail "plugin does not compile with '$cflags': $(head -3 "$T_TMP/cc.err")"
thpemu sim --policy modern-always --scenario seed-2011 --duration 20s --policy-plugin "$T_TMP/mthp.so" \
	--json "$T_TMP/plug.json" >/dev/null 2>"$T_TMP/sim.err" || fail "sim with the plugin: $(cat "$T_TMP/sim.err")"
jq -e '.policy | test("plugin=")' "$T_TMP/plug.json" >/dev/null || fail "sim report does not name the plugin"
say "plugin built with pkg-config --cflags ($cflags) and loaded by the installed thpemu sim"
# plugin=NAME: the installed example plugins by name, from the copy and from the build tree
for t in "$copy/bin/thpemu" "$THPEMU_BUILD_DIR/thpemu"; do
	"$t" sim --policy modern-always --scenario seed-2011 --duration 20s --seed 3 \
		--policy-plugin mthp_under_frag --json "$T_TMP/byname.json" >/dev/null 2>"$T_TMP/sim.err" ||
		fail "$t sim --policy-plugin mthp_under_frag: $(cat "$T_TMP/sim.err")"
	"$t" sim --policy modern-always --scenario seed-2011 --duration 20s --seed 3 \
		--policy-plugin "$copy/lib/thpemu/plugins/mthp_under_frag.so" --json "$T_TMP/bypath.json" \
		>/dev/null 2>&1 || fail "$t sim with the installed plugin's path"
	cmp -s <(jq -S 'del(.policy)' "$T_TMP/byname.json") <(jq -S 'del(.policy)' "$T_TMP/bypath.json") ||
		fail "$t: plugin=mthp_under_frag did not load the same plugin as its path"
done
say "plugin=NAME resolves to the installed plugins (copy: lib/thpemu/plugins; build: build/plugins)"

# --- the README's examples
need_root
need_uffd
need_fuse
need_cmd python3
need_cmd make
work="$T_TMP/work"
mkdir -p "$work"
cd "$work" || fail "cd"
# stand-ins for the README's placeholders
cat >app.py <<'PY'
buf = bytearray(16 << 20)
for i in range(0, len(buf), 4096):
    buf[i] = 1
print("app.py: touched", len(buf) >> 20, "MiB")
PY
printf '#!/bin/sh\nexec usemem --size 8M --quiet\n' >prog
printf '#!/bin/sh\nexec usemem --size 8M --hold 1s --quiet\n' >server
chmod +x prog server
printf 'all: a b c\na b c:\n\tusemem --size 4M --quiet >/dev/null\n' >Makefile

# The block, continuation lines joined, comments dropped, '&' split into separate commands.
awk '/^## What you do with it/ {s = 1; next}
     s == 1 && /^```/ {s = 2; next}
     s == 2 && /^```/ {exit}
     s == 2 {print}' "$THPEMU_SOURCE_DIR/README.md" |
	sed -e ':a' -e '/\\$/N; s/\\\n[[:space:]]*/ /; ta' |
	sed -e 's/[[:space:]]\+#.*$//' -e '/^[[:space:]]*#/d' -e '/^[[:space:]]*$/d' |
	sed -e 's/ & /\n/g' >"$T_OUT/examples.txt"
n=$(wc -l <"$T_OUT/examples.txt")
[ "$n" -ge 10 ] || fail "extracted only $n example commands from README.md"

mach="inst$$" # the README's machine m1, renamed: another test may have an m1 running
ran=0 skipped=0 deferred=()
run_ex() { # run_ex ORIGINAL COMMAND-TO-RUN
	say "run: $2"
	if ! timeout 60 bash -c "$2" >"$T_TMP/ex.out" 2>"$T_TMP/ex.err"; then
		cat "$T_TMP/ex.err" >&2
		fail "README example failed from the installed copy: $1"
	fi
	ran=$((ran + 1))
}
while IFS= read -r ex; do
	cmd=$(printf '%s' "$ex" | sed -e 's/^[[:space:]]*//' -e "s/\bm1\b/$mach/g")
	case "$cmd" in
	demo/seed-2011.sh*)
		say "skip: $ex -- a source-tree script over three kernels (~30 s); integration/seed2011 runs it"
		skipped=$((skipped + 1)) ;;
	demo/ab-2011.sh*)
		say "skip: $ex -- ~90 s of A/B runs; integration/ab_seed runs the same experiment"
		skipped=$((skipped + 1)) ;;
	LD_PRELOAD=/usr/local/*)
		# the README's prefix is /usr/local; here it is the copy
		run_ex "$ex" "${cmd//\/usr\/local/$copy}"
		ls out.*.json >/dev/null 2>&1 || fail "$ex wrote no out.PID.json" ;;
	"thpemu ab "*)
		# 10 runs of ~4 s each would be most of this test's budget: 2 runs per side
		run_ex "$ex" "${cmd/--runs 5/--runs 2}"
		jq -e '.' ab.json >/dev/null || fail "ab.json unreadable"
		[ -s ab.html ] || fail "ab wrote no ab.html" ;;
	"thpemu report "*)
		deferred+=("$cmd") ;; # needs sim.json from example 4, which comes after it
	"thpemu sim --policy"*"--json -")
		run_ex "$ex" "$cmd >sim.json" ;; # its JSON kept for the report example
	"thpemu run --machine"*"./server")
		say "run (background): $cmd"
		bash -c "$cmd" >"$T_TMP/server.out" 2>&1 &
		server=$! ;;
	"thpemu machine status $mach [--json]")
		run_ex "$ex" "thpemu machine status $mach"
		run_ex "$ex" "thpemu machine status $mach --json"
		jq -e '.' "$T_TMP/ex.out" >/dev/null || fail "machine status --json is not JSON" ;;
	"thpemu machine start"*)
		run_ex "$ex" "$cmd"
		at_exit "thpemu machine stop $mach" ;;
	"thpemu machine stop"*)
		[ -n "${server:-}" ] && { wait "$server" || fail "thpemu run --machine -- ./server failed: $(cat "$T_TMP/server.out")"; }
		run_ex "$ex" "$cmd"
		[ -s "$mach.json" ] || fail "machine stop wrote no report" ;;
	"thpemu oracle "*)
		say "skip: $ex -- boots Debian's kernels under qemu (apt, minutes of TCG); integration/oracle_pinned boots them"
		skipped=$((skipped + 1)) ;;
	"thpemu fidelity "*)
		say "skip: $ex -- boots Debian's kernels under qemu and runs thpemu from their memory (minutes); integration/fidelity_real compares them"
		skipped=$((skipped + 1)) ;;
	"thpemu run "*"-- thpemu-wl fragfault --fill 405M --region 128M")
		# the guest's sizes; a smaller fill and region are the same workload in a few seconds
		run_ex "$ex" "${cmd/--fill 405M --region 128M/--fill 64M --region 16M}"
		grep -q "^ORACLE summary extents=8 " "$T_TMP/ex.out" ||
			fail "thpemu-wl under thpemu run printed no summary of 8 extents" ;;
	thpemu\ *)
		run_ex "$ex" "$cmd" ;; # as written
	*)
		fail "README example without a rule in install.sh: $ex" ;;
	esac
done <"$T_OUT/examples.txt"
for cmd in "${deferred[@]}"; do
	run_ex "$cmd" "$cmd"
	[ -s report.html ] || fail "thpemu report wrote no report.html"
done
for f in run.json r.json a.json app.trace; do
	[ -s "$f" ] || fail "the examples left no $f"
done
# thpemu does not link libthpemu.so (ldd has nothing to say about it): it preloads it, so the
# managed program's own map must show the copy's, not build/'s
thpemu run --quiet -- cat /proc/self/maps >"$T_TMP/maps" 2>"$T_TMP/maps.err" ||
	fail "thpemu run -- cat /proc/self/maps: $(cat "$T_TMP/maps.err")"
lib=$(awk '/libthpemu\.so/ {print $6; exit}' "$T_TMP/maps")
[ "$lib" = "$copy/lib/thpemu/libthpemu.so" ] || fail "the managed program mapped libthpemu.so from '$lib'"
say "a managed program preloads $lib"
if [ -e "$THPEMU_BUILD_DIR/libthpemu-jemalloc.so" ]; then
	jem=$(awk '/libthpemu-jemalloc\.so/ {print $6; exit}' "$T_TMP/maps")
	[ "$jem" = "$copy/lib/thpemu/libthpemu-jemalloc.so" ] ||
		fail "the managed program mapped libthpemu-jemalloc.so from '$jem'"
	say "and its jemalloc $jem"
fi
# plugin=NAME live: libthpemu.so in the program resolves it too (lib/thpemu/plugins beside it)
thpemu run --quiet --policy-plugin huge_big_regions -- usemem --size 8M --quiet \
	>"$T_TMP/pl.out" 2>"$T_TMP/pl.err" || fail "run --policy-plugin huge_big_regions: $(cat "$T_TMP/pl.err")"
# (a first call slower than the plugin's time bound is only a warning: "select_orders took N us
# (bound 50 us ...)", seen under CI load)
grep -i plugin "$T_TMP/pl.err" | grep -v ' took [0-9]* us (bound ' &&
	fail "the managed program did not load plugin huge_big_regions"
say "README examples: $ran commands run from $copy, $skipped skipped (reasons above), of $n extracted"
