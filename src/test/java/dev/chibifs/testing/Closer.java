package dev.chibifs.testing;

import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.extension.AfterEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * What a test opened (stores, tmpfs disks), closed after it in the reverse order: a store before
 * the disk its cache is on. Registered as a field, {@code @RegisterExtension final Closer closer = new Closer();}.
 */
public final class Closer implements AfterEachCallback {

    private final List<AutoCloseable> open = new ArrayList<>();

    /** Keeps {@code c} to close after the test; returns it. */
    public <T extends AutoCloseable> T add(T c) {
        open.add(c);
        return c;
    }

    @Override
    public void afterEach(ExtensionContext context) throws Exception {
        Exception first = null;
        for (int i = open.size() - 1; i >= 0; i--) {
            try {
                open.get(i).close();
            } catch (Exception e) {
                if (first == null) {
                    first = e;
                } else {
                    first.addSuppressed(e);
                }
            }
        }
        open.clear();
        if (first != null) {
            throw first;
        }
    }
}
