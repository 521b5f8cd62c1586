package dev.chibifs.config;

import com.fasterxml.jackson.databind.JsonNode;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.nio.file.Path;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicReference;

/**
 * This site's id, from chibi's {@code <home>/site.json} ({@code {"uuid", "site_id"}}), read when
 * asked and again only when the file changed. chibifs never creates the file (chibi does, at its
 * first start): without it, or with one chibi could not read, there is no site id, and no
 * context of this site is a member of any flock.
 */
public final class SiteIdentity {

    private static final Logger LOG = LoggerFactory.getLogger(SiteIdentity.class);

    /** What one version of the file said, and why it gave no id; replaced whole, so a reader needs no lock. */
    private record Known(FileStamp stamp, Optional<String> siteId, String problem) {
    }

    private final Path file;
    // no lock: every flock request asks, and reading the file under one made them all wait for it
    private final AtomicReference<Known> known = new AtomicReference<>(new Known(null, Optional.empty(), null));
    /**
     * Set while one request looks at the file; the others take what is known meanwhile. A site.json
     * linked into this very mount's /flocks made each look a request there, which looked again, until
     * every worker waited on another (a tester's daemon hung past kill -9); a file on a stopped mount
     * now holds one worker, not every flock request.
     */
    private final java.util.concurrent.atomic.AtomicBoolean looking = new java.util.concurrent.atomic.AtomicBoolean();
    private final FileStamp.Stamper stamper;

    public SiteIdentity(ChibiHome home) {
        this(home.dir().resolve("site.json"), FileStamp::of);
    }

    SiteIdentity(Path file, FileStamp.Stamper stamper) {
        this.file = file;
        this.stamper = stamper;
    }

    /**
     * The site id now, or empty (why logged once, when it changed). Asked first before the mount
     * serves (so that what is known meanwhile is the file's, not nothing).
     */
    public Optional<String> siteId() {
        Known before = known.get();
        if (!looking.compareAndSet(false, true)) {
            return before.siteId();
        }
        try {
            FileStamp now;
            try {
                now = stamper.of(file);
            } catch (IOException e) {
                return record(before, new Known(null, Optional.empty(), "cannot read " + file + ": " + e));
            }
            if (now.equals(before.stamp())) {
                return before.siteId();
            }
            return record(before, now == FileStamp.MISSING ? new Known(now, Optional.empty(), null) : read(now));
        } finally {
            looking.set(false);
        }
    }

    /** {@code next} as what is known, unless another request recorded first: only the one that records it says what was wrong. */
    private Optional<String> record(Known before, Known next) {
        if (known.compareAndSet(before, next) && next.problem() != null && !next.problem().equals(before.problem())) {
            LOG.warn("{}; no site id, so no flock membership", next.problem());
        }
        return next.siteId();
    }

    /** What the version of the file stamped {@code now} says. */
    private Known read(FileStamp now) {
        try {
            JsonNode root = StrictJson.read(HomeFile.read(file, HomeFile.SITE_JSON_LIMIT));
            JsonNode id = root == null ? null : root.get("site_id");
            if (id != null && id.isTextual() && !id.asText().isEmpty()) {
                return new Known(now, Optional.of(id.asText()), null);
            }
            return new Known(now, Optional.empty(), file + " has no \"site_id\" string");
        } catch (HomeFile.RefusedException e) {
            return new Known(now, Optional.empty(), e.getMessage());
        } catch (IOException e) {
            return new Known(now, Optional.empty(), "cannot read " + file + ": " + e.getMessage());
        }
    }
}
