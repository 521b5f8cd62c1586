package dev.chibifs.config;

import java.io.IOException;
import java.nio.charset.CharacterCodingException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.List;

/**
 * The settings chibifs shares with chibi, read from chibi's own {@code config.toml} (keys it
 * does not know belong to chibi and are ignored).
 *
 * @param backend                  {@code [vfs] backend}; only {@code local} is built in
 * @param toolOutputCacheThreshold outputs larger than this many characters are cached
 * @param toolCacheMaxAgeDays      cache entries older than this are removed
 * @param toolCachePreviewChars    the stub previews at most this many characters
 * @param autoCleanupCache         whether the mount daemon sweeps the cache
 */
public record ChibiConfig(String backend, int toolOutputCacheThreshold, long toolCacheMaxAgeDays,
                          int toolCachePreviewChars, boolean autoCleanupCache) {

    /** The backends chibifs can serve. */
    public static final List<String> BACKENDS = List.of("local");

    /**
     * The largest {@code tool_cache_max_age_days} taken: a century. The sweep subtracts the age (plus
     * a day) from now; ages far past this overflow that arithmetic ({@code Duration}, {@code Instant})
     * and failed the mount or every sweep and {@code cache clean}, where the user meant "keep them".
     */
    public static final long MAX_TOOL_CACHE_MAX_AGE_DAYS = 36_500;

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
        String text;
        try {
            text = Files.readString(file);
        } catch (NoSuchFileException absent) {
            return DEFAULTS;
        } catch (CharacterCodingException e) {
            throw new ConfigException(file + ": not UTF-8 text, as TOML must be");
        } catch (IOException e) {
            throw new ConfigException(file + ": cannot read: " + e.getMessage());
        }
        return ConfigParser.parse(file, text);
    }
}
