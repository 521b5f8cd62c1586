package dev.chibifs.cli;

import dev.chibifs.config.ConfigException;
import dev.chibifs.path.InvalidVfsPathException;
import dev.chibifs.policy.InvalidContextNameException;
import dev.chibifs.sys.Errors;
import dev.chibifs.sys.InvalidSpecException;
import picocli.CommandLine;

import java.io.IOException;

/** Turns expected failures into one line on stderr and an exit code; only the unexpected gets a stack trace. */
final class ErrorHandler implements CommandLine.IExecutionExceptionHandler, CommandLine.IParameterExceptionHandler {

    /**
     * How every line chibifs writes to stderr begins, whichever command failed: scripts read it
     * (mount.fuse.chibifs passes on the {@code chibifs: warning:} lines, the launcher the daemon's).
     */
    static final String PREFIX = "chibifs: ";

    /** An I/O failure as one line for a person: {@link Errors#describe(IOException)}. */
    static String oneLine(IOException e) {
        return Errors.describe(e);
    }

    @Override
    public int handleParseException(CommandLine.ParameterException ex, String[] args) {
        CommandLine cl = ex.getCommandLine();
        if (cl.getCommandSpec().userObject() instanceof CachePutCommand put) {
            // a filter at the end of a pipe: the tool's output goes on, and stderr gets one line
            String printed = "printed unchanged";
            try {
                put.passInputThrough();
            } catch (IOException e) {
                printed = "could not print it: " + oneLine(e);
            }
            cl.getErr().println(PREFIX + ex.getMessage().replace('\n', ' ') + " (output " + printed
                    + "; see '" + cl.getCommandSpec().qualifiedName() + " --help')");
            return ExitCodes.USAGE;
        }
        // one line, as every failure (docs/cli-tools.md): where the help is, said on it
        cl.getErr().println(PREFIX + plain(ex.getMessage()).replace('\n', ' ') + " (see '"
                + cl.getCommandSpec().qualifiedName() + " --help')");
        return ExitCodes.USAGE;
    }

    /** Picocli's conversion failures in a person's words: "'x' is not an int" says a Java type. */
    static String plain(String message) {
        return message.replaceAll("is not an? (int|long|short|integer)\\b", "is not a whole number");
    }

    @Override
    public int handleExecutionException(Exception ex, CommandLine cl, CommandLine.ParseResult parseResult) {
        if (ex instanceof UsageException || ex instanceof InvalidContextNameException
                || ex instanceof InvalidVfsPathException || ex instanceof InvalidSpecException
                || ex instanceof ConfigException) {
            cl.getErr().println(PREFIX + ex.getMessage());
            return ExitCodes.USAGE;
        }
        if (ex instanceof CommandFailure f) {
            cl.getErr().println(PREFIX + f.getMessage());
            return f.exitCode();
        }
        if (ex instanceof MountFailure) {
            cl.getErr().println(PREFIX + ex.getMessage());
            return ExitCodes.FAILURE;
        }
        if (ex instanceof IOException io) {
            cl.getErr().println(PREFIX + oneLine(io));
            return ExitCodes.FAILURE;
        }
        cl.getErr().println(PREFIX + "unexpected error: " + ex);
        ex.printStackTrace(cl.getErr());
        return ExitCodes.FAILURE;
    }
}
