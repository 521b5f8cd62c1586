package dev.chibifs.config;

import dev.chibifs.sys.Errors;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.List;

/**
 * The settings chibifs shares with chibi, read from chibi's own {@code config.toml} (keys it
 * does not know belong to chibi and are ignored).
 *
 * <p>chibi reads the three numbers as {@code usize} and {@code u64}, and TOML integers are signed
 * 64-bit: every non-negative TOML integer is taken, as chibi takes it. Whatever cannot be counted
 * that far (an age past what a date can hold, a preview longer than a string) is clamped where it
 * is used.
 *
 * @param backend                  {@code [vfs] backend}; only {@code local} is built in
 * @param toolOutputCacheThreshold outputs larger than this many characters are cached
 * @param toolCacheMaxAgeDays      cache entries older than this (+ 1 day) are removed
 * @param toolCachePreviewChars    the stub previews at most this many characters
 * @param autoCleanupCache         whether the mount daemon sweeps the cache
 */
public record ChibiConfig(String backend, long toolOutputCacheThreshold, long toolCacheMaxAgeDays,
                          long toolCachePreviewChars, boolean autoCleanupCache) {

    /** The backends chibifs can serve. */
    public static final List<String> BACKENDS = List.of("local");

    /** chibi's defaults, used for every key the file leaves out. */
    public static final ChibiConfig DEFAULTS = new ChibiConfig("local", 4000, 7, 500, true);

    /**
     * Reads {@code <home>/config.toml}; an absent file means the defaults.
     *
     * @throws ConfigException when the file is malformed, a value has the wrong type or range, or
     *         the backend is unknown
     */
    public static ChibiConfig load(ChibiHome home) {
        Path file = home.configFile();
        String text = read(file);
        return text == null ? DEFAULTS : ConfigParser.parse(file, text);
    }

    /**
     * These settings with {@code context}'s {@code local.toml} laid over them, as chibi resolves a
     * context's config: its {@code tool_output_cache_threshold} and {@code tool_cache_preview_chars}
     * replace these. Its other keys are not read: the age limit and the switch are the sweep's,
     * which is global (chibi sweeps every context with the running context's setting).
     *
     * @throws ConfigException when the file is malformed or one of the two has the wrong type or range
     */
    public ChibiConfig forContext(ChibiHome home, String context) {
        Path file = home.localConfigFile(context);
        String text = read(file);
        return text == null ? this : ConfigParser.parseLocal(file, text, this);
    }

    /** The file's text, or null when it does not exist. */
    private static String read(Path file) {
        try {
            return StandardCharsets.UTF_8.newDecoder().onMalformedInput(CodingErrorAction.REPORT)
                    .onUnmappableCharacter(CodingErrorAction.REPORT)
                    .decode(ByteBuffer.wrap(HomeFile.read(file, HomeFile.CONFIG_TOML_LIMIT))).toString();
        } catch (NoSuchFileException absent) {
            return null;
        } catch (CharacterCodingException e) {
            throw new ConfigException(file + ": not UTF-8 text, as TOML must be");
        } catch (HomeFile.RefusedException e) {
            throw new ConfigException(file + ": cannot read: " + e.reason());
        } catch (IOException e) {
            // the JDK's AccessDeniedException says only the path: the reason is its errno's
            String why = Errors.describe(e);
            String named = ": " + file;
            throw new ConfigException(file + ": cannot read: "
                    + (why.endsWith(named) ? why.substring(0, why.length() - named.length()) : why));
        }
    }
}
