package dev.chibifs.fuse;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

/**
 * Run by {@link FuseMountTest} in a JVM of its own as an unprivileged user: mounts through
 * fusermount, answers INIT, sees a lookup arrive, unmounts with {@code fusermount -u -z} and sees
 * the session end. Prints one line, "ok ..." or "FAIL ...", and exits 0 only on success.
 */
public final class UserMountProbe {

    private UserMountProbe() {
    }

    public static void main(String[] args) {
        Path mnt = Path.of(args[0]);
        try (FuseDevice device = FuseMount.mount(mnt, MountSpec.parse(List.of(args).subList(1, args.length)))) {
            String type = MountTableWatch.typeAt(mnt).orElse("nothing");
            InitExchange.Init init = InitExchange.answerInit(device);
            InitExchange.Refuser refuser = new InitExchange.Refuser(device);
            refuser.start();
            boolean exists = Files.exists(mnt.resolve("probe"));
            boolean looked = refuser.opcodes.contains(InitExchange.FUSE_LOOKUP);
            FuseMount.Result r = FuseMount.unmount(mnt, true);
            refuser.join(10_000);
            Throwable end = refuser.end.get();
            String after = MountTableWatch.typeAt(mnt).orElse("nothing");
            boolean ok = type.equals("fuse.chibifs") && init.major() == 7 && !exists && looked && r.ok()
                    && end instanceof ChannelClosedException && after.equals("nothing");
            System.out.println((ok ? "ok" : "FAIL") + " mounted " + type + ", INIT 7." + init.minor() + " flags 0x"
                    + Long.toHexString(init.flags()) + ", lookup seen " + looked + ", unmount " + r + ", session end "
                    + end + ", then " + after);
            System.exit(ok ? 0 : 1);
        } catch (Throwable t) {
            System.out.println("FAIL " + t);
            System.exit(1);
        }
    }
}
