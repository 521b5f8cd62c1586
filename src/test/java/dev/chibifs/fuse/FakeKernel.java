package dev.chibifs.fuse;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The kernel's side of a FUSE connection, for tests without a mount: it writes requests in the
 * byte layout of linux/fuse.h into a {@link FuseChannel} that a real {@link FuseSession} reads,
 * and hands back each reply's bytes. Notifications (unique 0) are kept apart.
 */
final class FakeKernel implements FuseChannel {

    /** One reply: its error (negative errno, or 0) and its body, little-endian. */
    record Reply(int error, long unique, ByteBuffer body) {
        long int64(int at) {
            return body.getLong(at);
        }

        int int32(int at) {
            return body.getInt(at);
        }
    }

    private static final byte[] CLOSED = new byte[0];
    private final BlockingQueue<byte[]> requests = new LinkedBlockingQueue<>();
    private final BlockingQueue<Reply> replies = new LinkedBlockingQueue<>();
    final List<Reply> notifications = new ArrayList<>();
    /** As the kernel numbers requests: even ids, in queueing order (an INTERRUPT is its request's id + 1). */
    static final long UNIQUE_STEP = 2;
    private final AtomicLong unique = new AtomicLong(100);
    /** The thread the next requests come from (the header's pid). */
    volatile int pid = 1234;
    /** Replies to these unique ids fail as the kernel fails them for an interrupted request. */
    final java.util.Set<Long> refuse = java.util.concurrent.ConcurrentHashMap.newKeySet();

    @Override
    public int read(ByteBuffer dst) throws IOException {
        byte[] r;
        try {
            r = requests.take();
        } catch (InterruptedException e) {
            throw new ChannelClosedException("interrupted");
        }
        if (r == CLOSED) {
            requests.add(CLOSED); // every worker sees it
            throw new ChannelClosedException("unmounted");
        }
        dst.clear();
        dst.put(r);
        dst.flip();
        return r.length;
    }

    /**
     * While set, a notification's write waits for it, as the kernel waits for a lock a process
     * holds (a directory's for INVAL_ENTRY, a page's for INVAL_INODE of pages) while that process
     * waits for a reply. Replies go through meanwhile.
     */
    volatile CountDownLatch holdNotifications;

    @Override
    public void write(ByteBuffer... parts) throws IOException {
        CountDownLatch hold = holdNotifications;
        if (hold != null && parts[0].getLong(parts[0].position() + 8) == 0) {
            try {
                hold.await();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IOException("interrupted while the notification waited");
            }
        }
        take(parts);
    }

    private synchronized void take(ByteBuffer... parts) throws IOException {
        int total = 0;
        for (ByteBuffer p : parts) {
            total += p.remaining();
        }
        ByteBuffer all = ByteBuffer.allocate(total).order(ByteOrder.LITTLE_ENDIAN);
        for (ByteBuffer p : parts) {
            all.put(p.duplicate());
        }
        all.flip();
        int len = all.getInt(0);
        if (len != total) {
            throw new IOException("reply length " + len + " but " + total + " bytes written");
        }
        int error = all.getInt(4);
        long u = all.getLong(8);
        ByteBuffer body = all.position(16).slice().order(ByteOrder.LITTLE_ENDIAN);
        Reply reply = new Reply(error, u, body);
        if (u == 0) {
            notifications.add(reply);
            notifyAll();
            return;
        }
        if (refuse.remove(u)) {
            throw new dev.chibifs.sys.ErrnoException(2, "/dev/fuse", "No such file or directory");
        }
        replies.add(reply);
    }

    /** How many backing files the daemon asked this kernel to register (it refuses each, as without CAP_SYS_ADMIN). */
    final java.util.concurrent.atomic.AtomicInteger backingsAsked = new java.util.concurrent.atomic.AtomicInteger();

    @Override
    public int openBacking(int fd) throws IOException {
        backingsAsked.incrementAndGet();
        throw new dev.chibifs.sys.ErrnoException(1, "/dev/fuse", "Operation not permitted");
    }

    @Override
    public void closeBacking(int backingId) {
    }

    @Override
    public void close() {
        requests.add(CLOSED);
    }

    // ---- requests ----

    /** A request body under construction. */
    static final class Body {
        final ByteBuffer b = ByteBuffer.allocate(1 << 16).order(ByteOrder.LITTLE_ENDIAN);

        Body int32(int v) {
            b.putInt(v);
            return this;
        }

        Body int64(long v) {
            b.putLong(v);
            return this;
        }

        Body name(String s) {
            b.put(s.getBytes(StandardCharsets.UTF_8)).put((byte) 0);
            return this;
        }

        Body bytes(byte[] data) {
            b.put(data);
            return this;
        }
    }

    static Body body() {
        return new Body();
    }

    /** The unique id the next request will carry. */
    long nextUnique() {
        return unique.get() + UNIQUE_STEP;
    }

    long send(int opcode, long nodeid, Body body) {
        return send(opcode, nodeid, 0, body);
    }

    long send(int opcode, long nodeid, int uid, Body body) {
        ByteBuffer b = body.b.duplicate().flip();
        int len = FuseProtocol.IN_HEADER + b.remaining();
        ByteBuffer r = ByteBuffer.allocate(len).order(ByteOrder.LITTLE_ENDIAN);
        long u = unique.addAndGet(UNIQUE_STEP);
        // the gid is the uid's number, as a user's own group
        r.putInt(len).putInt(opcode).putLong(u).putLong(nodeid).putInt(uid).putInt(uid).putInt(pid).putShort((short) 0)
                .putShort((short) 0).put(b);
        requests.add(r.array());
        return u;
    }

    /** Sends a request and waits for its reply (5 s at most). */
    Reply call(int opcode, long nodeid, Body body) throws InterruptedException {
        return call(opcode, nodeid, 0, body);
    }

    Reply call(int opcode, long nodeid, int uid, Body body) throws InterruptedException {
        long u = send(opcode, nodeid, uid, body);
        Reply r = replies.poll(5, TimeUnit.SECONDS);
        if (r == null) {
            throw new AssertionError(FuseProtocol.opcodeName(opcode) + ": no reply within 5 s");
        }
        if (r.unique() != u) {
            throw new AssertionError("reply to " + r.unique() + " while waiting for " + u);
        }
        return r;
    }

    /** The next reply, to whichever request (5 s at most). */
    /** Whether a reply is waiting to be taken. */
    boolean answered() {
        return !replies.isEmpty();
    }

    Reply reply() throws InterruptedException {
        Reply r = replies.poll(5, TimeUnit.SECONDS);
        if (r == null) {
            throw new AssertionError("no reply within 5 s");
        }
        return r;
    }

    /** The notifications of kind {@code code} (NOTIFY_*) so far, in order. */
    synchronized List<Reply> notifications(int code) {
        return notifications.stream().filter(n -> n.error() == code).toList();
    }

    /** Waits (5 s at most) for a notification that {@code wanted} accepts. */
    synchronized Reply awaitNotification(java.util.function.Predicate<Reply> wanted) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
        while (true) {
            for (Reply n : notifications) {
                if (wanted.test(n)) {
                    return n;
                }
            }
            long left = deadline - System.nanoTime();
            if (left <= 0) {
                throw new AssertionError("no such notification within 5 s: " + notifications);
            }
            TimeUnit.NANOSECONDS.timedWait(this, left);
        }
    }

    /**
     * A session of one worker over {@code fs} reading from this kernel, started and past INIT
     * (READDIRPLUS offered), as a mount is before its first request; {@code beforeStart} may hook
     * it first (a change follower's notifications).
     */
    FuseSession startSession(FuseFileSystem fs, RequestStats stats, java.util.function.Consumer<FuseSession> beforeStart)
            throws InterruptedException {
        FuseSession session = new FuseSession(this, fs, new FuseSession.Settings(1 << 20, 1, true, false, false), stats);
        beforeStart.accept(session);
        session.start();
        Reply init = init(FuseProtocol.DO_READDIRPLUS);
        if (init.error() != 0) {
            throw new AssertionError("INIT answered " + init.error());
        }
        return session;
    }

    FuseSession startSession(FuseFileSystem fs, RequestStats stats) throws InterruptedException {
        return startSession(fs, stats, s -> { });
    }

    /** INIT as a 7.38 kernel sends it, offering {@code flags}. */
    Reply init(long flags) throws InterruptedException {
        return call(FuseProtocol.INIT, 0, body().int32(7).int32(38).int32(128 * 1024).int32((int) flags)
                .int32((int) (flags >>> 32)).bytes(new byte[44]));
    }
}
