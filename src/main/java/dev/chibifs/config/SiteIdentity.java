package dev.chibifs.config;

import com.fasterxml.jackson.databind.JsonNode;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Optional;

/**
 * This site's id, from chibi's {@code <home>/site.json} ({@code {"uuid", "site_id"}}), read when
 * asked and again only when the file changed. chibifs never creates the file (chibi does, at its
 * first start): without it, or with one chibi could not read, there is no site id, and no
 * context of this site is a member of any flock.
 */
public final class SiteIdentity {

    private static final Logger LOG = LoggerFactory.getLogger(SiteIdentity.class);

    private final Path file;
    private FileStamp stamp;
    private Optional<String> siteId = Optional.empty();

    public SiteIdentity(ChibiHome home) {
        this.file = home.dir().resolve("site.json");
    }

    /** The site id now, or empty (logged once per version of the file when it is unreadable). */
    public synchronized Optional<String> siteId() {
        FileStamp now;
        try {
            now = FileStamp.of(file);
        } catch (IOException e) {
            LOG.warn("cannot read {}: {}; no site id, so no flock membership", file, e.toString());
            stamp = null;
            return siteId = Optional.empty();
        }
        if (now.equals(stamp)) {
            return siteId;
        }
        stamp = now;
        siteId = now == FileStamp.MISSING ? Optional.empty() : read();
        return siteId;
    }

    private Optional<String> read() {
        try {
            JsonNode root = StrictJson.read(Files.readAllBytes(file));
            JsonNode id = root == null ? null : root.get("site_id");
            if (id != null && id.isTextual() && !id.asText().isEmpty()) {
                return Optional.of(id.asText());
            }
            LOG.warn("{} has no \"site_id\" string; no site id, so no flock membership", file);
        } catch (IOException e) {
            LOG.warn("cannot read {}: {}; no site id, so no flock membership", file, e.getMessage());
        }
        return Optional.empty();
    }
}
