#!/bin/sh
# help2man-usage.sh PROG ARGS...: runs PROG ARGS and rewrites its usage block the way help2man
# reads a SYNOPSIS: "usage:" becomes "Usage:", a further form of the command (a line starting
# with the program's name) becomes "  or: ...", and an indented continuation line is joined to
# the line it continues. Everything else passes unchanged; PROG's exit status is kept.
prog=$1
shift
out=$("$prog" "$@" 2>&1) || exit $?
printf '%s\n' "$out" | awk '
	u == 0 && /^usage: / { u = 1; sub(/^usage:/, "Usage:"); name = $2; line = $0; next }
	u == 1 && /^[ \t]*$/ { print line; u = 2; print; next }
	u == 1 {
		t = $0
		sub(/^[ \t]+/, "", t)
		if (index(t, name " ") == 1) { print line; line = "  or: " t }
		else line = line " " t
		next
	}
	{ print }
	END { if (u == 1) print line }'
