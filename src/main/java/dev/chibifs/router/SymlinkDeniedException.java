package dev.chibifs.router;

import dev.chibifs.store.OperationNotPermittedException;

/**
 * EPERM: the link rule ({@code --symlinks}) refuses a symbolic link's target where the link would
 * be made, or be moved to. The message names the link, the target, the rule and why.
 */
public final class SymlinkDeniedException extends OperationNotPermittedException {
    private static final long serialVersionUID = 1L;

    private final String why;

    public SymlinkDeniedException(String link, String why) {
        super(link, why);
        this.why = why;
    }

    /** The link, its target, the rule and why, once (the path is in it already). */
    @Override
    public String getMessage() {
        return why;
    }
}
