package dev.chibifs.path;

import java.nio.ByteBuffer;
import java.nio.CharBuffer;
import java.nio.charset.CharsetDecoder;
import java.nio.charset.CoderResult;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;

/**
 * Names and URIs as output for people shows them (the vfs commands, the tool cache's lines and
 * log): one entry per line, whatever the name holds.
 * Backslash escapes as {@code ls -b} writes them: {@code \n}, {@code \t} and the like for control
 * characters, {@code \ooo} (octal) for each byte of any other control character and for each byte
 * that is not UTF-8, {@code \\} for a backslash; everything else, spaces too, as it is. JSON
 * output never uses this: its strings carry names exactly.
 */
public final class Names {

    private Names() {
    }

    /** {@code text} escaped for one line of human output. */
    public static String shown(String text) {
        StringBuilder out = null;
        for (int i = 0; i < text.length(); ) {
            int c = text.codePointAt(i);
            int next = i + Character.charCount(c);
            String escape = escape(c);
            if (escape != null && out == null) {
                out = new StringBuilder(text.length() + 8).append(text, 0, i);
            }
            if (out != null) {
                if (escape != null) {
                    out.append(escape);
                } else {
                    out.append(text, i, next);
                }
            }
            i = next;
        }
        return out == null ? text : out.toString();
    }

    /** The URI of {@code path}, escaped as {@link #shown(String)}. */
    public static String shown(VfsPath path) {
        return shown(path.toUri());
    }

    /**
     * A host path (a mountpoint, a home, a log) escaped as {@link #shown(String)}, for one line of
     * output: a mountpoint made with a newline in its name printed it raw, splitting the line.
     */
    public static String shown(java.nio.file.Path hostPath) {
        return shown(hostPath.toString());
    }

    /** A name as a directory holds it, escaped: bytes that are not UTF-8 as {@code \ooo}. */
    public static String shown(byte[] name) {
        if (isUtf8(name)) {
            return shown(new String(name, StandardCharsets.UTF_8));
        }
        StringBuilder out = new StringBuilder(name.length * 4);
        CharsetDecoder decoder = utf8Decoder();
        ByteBuffer in = ByteBuffer.wrap(name);
        CharBuffer chars = CharBuffer.allocate(name.length + 1);
        while (in.hasRemaining()) {
            CoderResult r = decoder.decode(in, chars, true);
            chars.flip();
            out.append(shown(chars.toString()));
            chars.clear();
            if (r.isMalformed() || r.isUnmappable()) {
                for (int i = 0; i < r.length(); i++) {
                    out.append(octal(in.get()));
                }
            }
        }
        return out.toString();
    }

    /** The longest start of {@code name} whose UTF-8 is at most {@code maxBytes} bytes, cut between code points. */
    public static String cutToUtf8Bytes(String name, int maxBytes) {
        int bytes = 0;
        for (int i = 0; i < name.length(); ) {
            int c = name.codePointAt(i);
            int size = c < 0x80 ? 1 : c < 0x800 ? 2 : c < 0x10000 ? 3 : 4;
            if (bytes + size > maxBytes) {
                return name.substring(0, i);
            }
            bytes += size;
            i += Character.charCount(c);
        }
        return name;
    }

    /** True when {@code name} is valid UTF-8, so a String holds it exactly. */
    public static boolean isUtf8(byte[] name) {
        try {
            utf8Decoder().decode(ByteBuffer.wrap(name));
            return true;
        } catch (java.nio.charset.CharacterCodingException e) {
            return false;
        }
    }

    /** A decoder of UTF-8 that refuses what is not, instead of replacing it. */
    public static CharsetDecoder utf8Decoder() {
        return StandardCharsets.UTF_8.newDecoder()
                .onMalformedInput(CodingErrorAction.REPORT)
                .onUnmappableCharacter(CodingErrorAction.REPORT);
    }

    /** The escape of code point {@code c}, or null when it is shown as it is. */
    private static String escape(int c) {
        switch (c) {
            case '\\': return "\\\\";
            case '\n': return "\\n";
            case '\t': return "\\t";
            case '\r': return "\\r";
            case 0x07: return "\\a";
            case '\b': return "\\b";
            case '\f': return "\\f";
            case 0x0b: return "\\v";
            default: break;
        }
        // C0, DEL and C1 controls: a terminal acts on them (C1 0x9b starts an escape sequence)
        if (c < 0x20 || c >= 0x7f && c <= 0x9f) {
            StringBuilder octal = new StringBuilder();
            for (byte b : new String(Character.toChars(c)).getBytes(StandardCharsets.UTF_8)) {
                octal.append(octal(b));
            }
            return octal.toString();
        }
        return null;
    }

    private static String octal(byte b) {
        return String.format("\\%03o", b & 0xff);
    }
}
