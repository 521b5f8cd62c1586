package dev.chibifs.fuse;

import dev.chibifs.policy.Caller;

import java.util.Map;
import java.util.Optional;

/** Turns the uid of a requesting process into the caller the policy judges. */
public interface CallerResolver {

    /** The caller for a request from {@code uid}. */
    Caller resolve(long uid);

    /** True when the caller does not depend on the uid (a per-context mount), so no FUSE context lookup is needed. */
    boolean isFixed();

    /** The uid shown as owner of {@code /home/<context>}, if one is mapped to it. */
    Optional<Long> uidOf(String context);

    /** The uid that acts as SYSTEM on a uid-mapped mount ({@code --system-uid}); empty where none does. */
    default Optional<Long> systemUid() {
        return Optional.empty();
    }

    /** Every request is {@code caller}: the per-context mount. */
    static CallerResolver fixed(Caller caller) {
        return new CallerResolver() {
            @Override
            public Caller resolve(long uid) {
                return caller;
            }

            @Override
            public boolean isFixed() {
                return true;
            }

            @Override
            public Optional<Long> uidOf(String context) {
                return Optional.empty();
            }
        };
    }

    /**
     * The caller comes from the uid: mapped uids are their context, {@code systemUid} (if any)
     * is SYSTEM, every other uid (root included) is a read-only guest.
     */
    static CallerResolver uidMap(Map<Long, String> contexts, Long systemUid) {
        Map<Long, Caller> callers = new java.util.HashMap<>();
        Map<String, Long> owners = new java.util.HashMap<>();
        contexts.forEach((uid, name) -> {
            callers.put(uid, Caller.context(name));
            owners.putIfAbsent(name, uid);
        });
        if (systemUid != null) {
            callers.put(systemUid, Caller.SYSTEM);
        }
        Map<Long, Caller> frozen = Map.copyOf(callers);
        Map<String, Long> frozenOwners = Map.copyOf(owners);
        return new CallerResolver() {
            @Override
            public Caller resolve(long uid) {
                return frozen.getOrDefault(uid, Caller.GUEST);
            }

            @Override
            public boolean isFixed() {
                return false;
            }

            @Override
            public Optional<Long> uidOf(String context) {
                return Optional.ofNullable(frozenOwners.get(context));
            }

            @Override
            public Optional<Long> systemUid() {
                return Optional.ofNullable(systemUid);
            }
        };
    }
}
