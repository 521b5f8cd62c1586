package dev.chibifs.cli;

/** Help text shared by the vfs commands, so every command states its exit codes the same way. */
final class HelpText {
    static final String EXIT_HEADING = "%nExit codes:%n";
    static final String OK = "  0  success";
    static final String NOT_FOUND = "  1  no such file or directory";
    static final String NO_MATCH = "  1  nothing matched (as grep does), or no such file or directory";
    static final String USAGE = "  2  usage: a bad option, URI or context name; no caller for a write";
    static final String DENIED = "  3  permission denied by the zone policy (the mount's rule and words), or by the"
            + " operating system on the store's files (the message says which)";
    static final String CONFLICT = "  4  conflict: the path is of the wrong kind or in the wrong state";
    static final String IO = "  5  other I/O error";

    static final String READER = "Reading is always allowed: with no --as, --as-system or $CHIBI_CONTEXT the command"
            + " acts as a read-only guest.";
    static final String WRITER = "Acts as --as NAME, else $CHIBI_CONTEXT; SYSTEM only with --as-system."
            + " Writable by every context: /shared/**, /site/**, /tools/shared/**; by NAME only: /home/<NAME>/**,"
            + " /tools/home/<NAME>/**; by a flock's members: /flocks/<flock>/**, /tools/flocks/<flock>/**; by SYSTEM:"
            + " all of it and everything else but /tools/sys/**, which nobody writes.";
    static final String ESCAPES = "In names and URIs printed for people, control characters (a newline too), backslashes and"
            + " bytes that are not UTF-8 are shown as escapes, as ls -b does: \\n, \\t, \\\\, \\377; --json gives them exactly.";
    static final String URI = "URIs are vfs:///path (three slashes), e.g. vfs:///shared/tasks.md.";

    private HelpText() {
    }
}
