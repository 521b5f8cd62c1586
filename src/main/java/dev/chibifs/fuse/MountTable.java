package dev.chibifs.fuse;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/** This host's mounts as the kernel lists them in {@code /proc/mounts}. */
public final class MountTable {

    /** The type our daemons' mounts carry in the table. */
    public static final String CHIBIFS_TYPE = "fuse.chibifs";

    /** The kernel's table. */
    public static final Path SYSTEM_TABLE = Path.of("/proc/mounts");

    /** One line of the table, with the kernel's octal escapes undone. */
    public record MountEntry(String source, Path mountpoint, String fsType, String options) {
        /** The FUSE option naming the uid that mounted it, who alone (and root) may unmount it. */
        private static final String MOUNTER_OPTION = "user_id=";

        /** True for a chibifs mount. */
        public boolean isChibifs() {
            return fsType.equals(CHIBIFS_TYPE);
        }

        /** The uid the options name as its mounter ({@code user_id=}), or -1 where they name none. */
        public long mounter() {
            for (String option : options.split(",")) {
                if (option.startsWith(MOUNTER_OPTION)) {
                    try {
                        return Long.parseLong(option.substring(MOUNTER_OPTION.length()));
                    } catch (NumberFormatException notAUid) {
                        return -1;
                    }
                }
            }
            return -1;
        }
    }

    private MountTable() {
    }

    /** Every mount listed in {@code table} (a file in /proc/mounts format). */
    public static List<MountEntry> read(Path table) throws IOException {
        List<MountEntry> out = new ArrayList<>();
        for (String line : Files.readAllLines(table)) {
            String[] f = line.split(" ");
            if (f.length >= 4) {
                out.add(new MountEntry(unescape(f[0]), Path.of(unescape(f[1])), unescape(f[2]), f[3]));
            }
        }
        return out;
    }

    /** The chibifs mounts listed in {@code table}. */
    public static List<MountEntry> chibifsMounts(Path table) throws IOException {
        return read(table).stream().filter(MountEntry::isChibifs).toList();
    }

    /** The topmost mount at exactly {@code mountpoint} on this host, if any. */
    public static Optional<MountEntry> find(Path mountpoint) throws IOException {
        return find(SYSTEM_TABLE, mountpoint);
    }

    /** {@link #find(Path)} in {@code table} (a file in /proc/mounts format). */
    public static Optional<MountEntry> find(Path table, Path mountpoint) throws IOException {
        return topmostAt(read(table), mountpoint.toAbsolutePath().normalize());
    }

    /** The mount on top at exactly {@code mountpoint} among {@code mounts} (a table's lines, in order). */
    public static Optional<MountEntry> topmostAt(List<MountEntry> mounts, Path mountpoint) {
        MountEntry found = null;
        for (MountEntry e : mounts) {
            if (e.mountpoint().equals(mountpoint)) {
                found = e; // later lines are mounted on top of earlier ones
            }
        }
        return Optional.ofNullable(found);
    }

    /**
     * The mount {@code path} is in, below {@code path} itself: the one at the deepest of its parent
     * directories among {@code mounts} (a table's lines, in order; later lines on top).
     */
    public static Optional<MountEntry> containing(List<MountEntry> mounts, Path path) {
        MountEntry found = null;
        for (MountEntry e : mounts) {
            Path at = e.mountpoint();
            if (!at.equals(path) && path.startsWith(at)
                    && (found == null || at.getNameCount() >= found.mountpoint().getNameCount())) {
                found = e;
            }
        }
        return Optional.ofNullable(found);
    }

    /** The kernel writes space, tab, newline and backslash in paths as {@code \040}, {@code \011}, {@code \012}, {@code \134}. */
    public static String unescape(String field) {
        if (field.indexOf('\\') < 0) {
            return field;
        }
        StringBuilder b = new StringBuilder(field.length());
        for (int i = 0; i < field.length(); i++) {
            char c = field.charAt(i);
            if (c == '\\' && i + 4 <= field.length() && field.substring(i + 1, i + 4).matches("[0-7]{3}")) {
                b.append((char) Integer.parseInt(field.substring(i + 1, i + 4), 8));
                i += 3;
            } else {
                b.append(c);
            }
        }
        return b.toString();
    }

    /**
     * One line of a mountinfo file: the mount's id, its device, where it is, its type, and, as
     * {@code /proc/mounts} has them, its source and its file system's options.
     */
    record InfoLine(int id, String device, String mountpoint, String type, String source, String superOptions) {
        /**
         * {@code 45 27 0:42 / /mnt/chibi rw,relatime shared:1 - fuse.chibifs chibifs rw,...}: id,
         * parent, device, root, mount point, options, optional fields, then "-", the type, the
         * source and the super block's options.
         */
        static InfoLine parse(String line) {
            String[] f = line.split(" ");
            int dash = -1;
            for (int i = 6; i < f.length; i++) {
                if (f[i].equals("-")) {
                    dash = i;
                    break;
                }
            }
            if (dash < 0 || dash + 1 >= f.length) {
                return null;
            }
            try {
                return new InfoLine(Integer.parseInt(f[0]), f[2], unescape(f[4]), f[dash + 1],
                        dash + 2 < f.length ? unescape(f[dash + 2]) : "", dash + 3 < f.length ? f[dash + 3] : "");
            } catch (NumberFormatException e) {
                return null;
            }
        }

        /** The line as {@link #read} has it from /proc/mounts. */
        MountEntry entry() {
            return new MountEntry(source, Path.of(mountpoint), type, superOptions);
        }
    }

    /** The mounts at exactly {@code mountpoint} in this process's mountinfo, bottom first (the order it lists them in). */
    static List<InfoLine> stackAt(Path mountinfo, String mountpoint) throws IOException {
        List<InfoLine> stack = new ArrayList<>();
        for (String line : Files.readAllLines(mountinfo)) {
            InfoLine m = InfoLine.parse(line);
            if (m != null && m.mountpoint().equals(mountpoint)) {
                stack.add(m);
            }
        }
        return stack;
    }
}
