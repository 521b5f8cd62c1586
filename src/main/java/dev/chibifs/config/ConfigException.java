package dev.chibifs.config;

/** chibi's config.toml is malformed or holds a bad value; the message names the file, the line and the key. */
public final class ConfigException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    public ConfigException(String message) {
        super(message);
    }
}
