package dev.chibifs.cli;

import dev.chibifs.config.ConfigException;
import dev.chibifs.path.InvalidVfsPathException;
import dev.chibifs.policy.InvalidContextNameException;
import picocli.CommandLine;

import java.io.IOException;

/** Turns expected failures into one line on stderr and an exit code; only the unexpected gets a stack trace. */
final class ErrorHandler implements CommandLine.IExecutionExceptionHandler, CommandLine.IParameterExceptionHandler {

    @Override
    public int handleParseException(CommandLine.ParameterException ex, String[] args) {
        CommandLine cl = ex.getCommandLine();
        cl.getErr().println("chibifs: " + ex.getMessage());
        cl.getErr().println("Try '" + cl.getCommandSpec().qualifiedName() + " --help' for more information.");
        return ExitCodes.USAGE;
    }

    @Override
    public int handleExecutionException(Exception ex, CommandLine cl, CommandLine.ParseResult parseResult) {
        if (ex instanceof UsageException || ex instanceof InvalidContextNameException
                || ex instanceof InvalidVfsPathException || ex instanceof ConfigException) {
            cl.getErr().println("chibifs: " + ex.getMessage());
            return ExitCodes.USAGE;
        }
        if (ex instanceof CommandFailure f) {
            cl.getErr().println("chibifs: " + f.getMessage());
            return f.exitCode();
        }
        if (ex instanceof MountFailure) {
            cl.getErr().println("chibifs: " + ex.getMessage());
            return ExitCodes.FAILURE;
        }
        if (ex instanceof IOException) {
            cl.getErr().println("chibifs: " + ex);
            return ExitCodes.FAILURE;
        }
        cl.getErr().println("chibifs: unexpected error: " + ex);
        ex.printStackTrace(cl.getErr());
        return ExitCodes.FAILURE;
    }
}
