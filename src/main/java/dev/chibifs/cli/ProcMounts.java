package dev.chibifs.cli;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/** Reads the mount table ({@code /proc/mounts}), the kernel's own word on what is mounted where. */
final class ProcMounts {

    /** The filesystem type our daemons' mounts carry in the mount table. */
    static final String CHIBIFS_TYPE = "fuse.chibifs";

    static final Path SYSTEM_TABLE = Path.of("/proc/mounts");

    /** One line of the table, with the kernel's octal escapes undone. */
    record Mount(String source, Path mountpoint, String type, String options) {
    }

    private ProcMounts() {
    }

    static List<Mount> read(Path table) throws IOException {
        List<Mount> mounts = new ArrayList<>();
        for (String line : Files.readAllLines(table)) {
            String[] fields = line.split(" ");
            if (fields.length >= 4) {
                mounts.add(new Mount(unescape(fields[0]), Path.of(unescape(fields[1])), unescape(fields[2]),
                        fields[3]));
            }
        }
        return mounts;
    }

    static List<Mount> chibifsMounts(Path table) throws IOException {
        return read(table).stream().filter(m -> m.type().equals(CHIBIFS_TYPE)).toList();
    }

    /** Whether MOUNTPOINT (absolute, normalized) is a chibifs mount in the table. */
    static boolean isChibifsMount(Path table, Path mountpoint) throws IOException {
        return chibifsMounts(table).stream().anyMatch(m -> m.mountpoint().equals(mountpoint));
    }

    // the kernel writes space, tab, newline and backslash in paths as \040, \011, \012, \134
    static String unescape(String field) {
        if (field.indexOf('\\') < 0) {
            return field;
        }
        StringBuilder out = new StringBuilder(field.length());
        for (int i = 0; i < field.length(); i++) {
            char c = field.charAt(i);
            if (c == '\\' && isOctal(field, i + 1)) {
                out.append((char) Integer.parseInt(field.substring(i + 1, i + 4), 8));
                i += 3;
            } else {
                out.append(c);
            }
        }
        return out.toString();
    }

    private static boolean isOctal(String s, int from) {
        if (from + 3 > s.length()) {
            return false;
        }
        for (int i = from; i < from + 3; i++) {
            if (s.charAt(i) < '0' || s.charAt(i) > '7') {
                return false;
            }
        }
        return true;
    }
}
