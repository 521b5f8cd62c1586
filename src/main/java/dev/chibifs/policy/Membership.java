package dev.chibifs.policy;

/**
 * Who belongs to which flock, as the policy asks it: only for a write in {@code /flocks/<name>}
 * or {@code /tools/flocks/<name>}. An implementation may read chibi's registry when asked (the
 * registry changes while a mount runs); the policy stays a pure function of its answers.
 */
public interface Membership {

    /** Nobody is a member of any flock: flock spaces are SYSTEM's. */
    Membership NONE = new Membership() {
        @Override
        public boolean isMember(String flock, String context) {
            return false;
        }

        @Override
        public String problem() {
            return null;
        }
    };

    /** Whether {@code context} of this site is a member of flock {@code flock}. */
    boolean isMember(String flock, String context);

    /**
     * Why no membership can be granted right now (a malformed or unreadable registry), for the
     * denial message; null when the registry was read.
     */
    String problem();
}
