import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Line input for prompts: reads from the controlling terminal when there is one (so prompts
/// work while stdin is a pipe), polls so that a cancelled request stops waiting, and can turn
/// echo off for passphrases. Prompts go to standard error, keeping standard output for results.
public struct Terminal: Sendable {
    public enum ReadResult: Equatable {
        case line(String)
        case endOfInput
        case cancelled
        case timedOut
    }

    /// The file descriptor prompts read from: /dev/tty if it opens, else standard input.
    public let inputDescriptor: Int32

    public static let shared = Terminal()

    private init() {
        let tty = open("/dev/tty", O_RDWR | O_CLOEXEC)
        inputDescriptor = tty >= 0 ? tty : STDIN_FILENO
    }

    public var isInteractive: Bool { isatty(inputDescriptor) == 1 }

    public func write(_ text: String) {
        FileHandle.standardError.write(Data(text.utf8))
    }

    /// Reads one line, giving up when `timeout` passes or the task is cancelled. `prompt`, if given, is written once
    /// echo is off, so nothing typed after it appears can be echoed.
    public func readLine(timeout: Duration, echo: Bool = true, prompt: String? = nil) async -> ReadResult {
        let restore = echo ? nil : disableEcho()
        if let prompt { write(prompt) }
        defer {
            if let restore {
                restore()
                write("\n")
            }
        }
        let deadline = ContinuousClock.now + timeout
        var bytes: [UInt8] = []
        while true {
            if Task.isCancelled { return .cancelled }
            if ContinuousClock.now >= deadline { return .timedOut }
            var descriptor = pollfd(fd: inputDescriptor, events: Int16(POLLIN), revents: 0)
            let ready = poll(&descriptor, 1, 0)
            if ready <= 0 {
                try? await Task.sleep(for: .milliseconds(50))
                continue
            }
            var byte: UInt8 = 0
            let count = read(inputDescriptor, &byte, 1)
            if count <= 0 { return bytes.isEmpty ? .endOfInput : .line(String(decoding: bytes, as: UTF8.self)) }
            if byte == UInt8(ascii: "\n") { return .line(String(decoding: bytes, as: UTF8.self)) }
            if bytes.count < 4096 { bytes.append(byte) }
        }
    }

    /// Reads a secret (a PIN) after `prompt`, without echo; see ``readLine(timeout:echo:)``.
    public func readSecret(prompt: String, timeout: Duration) async -> ReadResult {
        await readLine(timeout: timeout, echo: false, prompt: prompt)
    }

    /// Turns terminal echo off; returns the function that restores it. A signal that would end the process while
    /// echo is off restores it first (``EchoRestoringSignals``).
    private func disableEcho() -> (() -> Void)? {
        var original = termios()
        guard tcgetattr(inputDescriptor, &original) == 0 else { return nil }
        var silent = original
        silent.c_lflag &= ~tcflag_t(ECHO)
        EchoRestoringSignals.install(descriptor: inputDescriptor, original: original)
        guard tcsetattr(inputDescriptor, TCSANOW, &silent) == 0 else {
            EchoRestoringSignals.remove()
            return nil
        }
        let descriptor = inputDescriptor
        return {
            var restored = original
            tcsetattr(descriptor, TCSANOW, &restored)
            EchoRestoringSignals.remove()
        }
    }
}

/// Puts the terminal back when a signal ends the process while echo is off (Ctrl-C at a PIN prompt, a `kill`):
/// the handler restores the saved settings with `tcsetattr` (async-signal-safe), sets the signal's default action
/// back and raises it again, so the process ends as it would have, with its terminal as it found it.
///
/// Only signals whose action is the default are taken over; one that the program handles or ignores (`passkey
/// serve` handles SIGINT and SIGTERM to stop cleanly) is left alone, since the program then ends through code
/// that restores the terminal itself. One prompt at a time reads a secret, so one saved state is enough.
public enum EchoRestoringSignals {
    public static let signals: [Int32] = [SIGINT, SIGTERM, SIGHUP, SIGQUIT]

    /// Written before any handler is installed, read only by the handler.
    nonisolated(unsafe) private static var saved = termios()
    nonisolated(unsafe) private static var descriptor: Int32 = -1
    /// The signals this type installed its handler for.
    nonisolated(unsafe) private static var installed: [Int32] = []

    private static let handler: @convention(c) (Int32) -> Void = { number in
        _ = tcsetattr(EchoRestoringSignals.descriptor, TCSANOW, &EchoRestoringSignals.saved)
        _ = signal(number, SIG_DFL)
        _ = raise(number)
    }

    /// Puts the saved settings back if a prompt has echo off now (async-signal-safe: for a signal handler).
    fileprivate static func restoreIfSaved() {
        if descriptor >= 0 { _ = tcsetattr(descriptor, TCSANOW, &saved) }
    }

    public static func install(descriptor: Int32, original: termios) {
        saved = original
        self.descriptor = descriptor
        installed = signals.filter { number in
            let previous = signal(number, handler)
            guard unsafeBitCast(previous, to: Int.self) == unsafeBitCast(SIG_DFL, to: Int.self) else {
                _ = signal(number, previous)
                return false
            }
            return true
        }
    }

    public static func remove() {
        for number in installed { _ = signal(number, SIG_DFL) }
        installed = []
        descriptor = -1
    }
}

/// Ctrl-C, the same for every command: the terminal is put back if a prompt had turned echo off, the one line
/// `passkey: interrupted` goes to standard error, and the process exits with status 130 (128 + SIGINT), which is
/// what a shell reports for a command SIGINT ended. The long-running commands (`serve`, `listen`, `rp serve`)
/// take SIGINT over while they run, to stop cleanly, and then end the same way (`Interruption.end()`).
public enum Interruption {
    /// The line printed: a `StaticString`, which the handler writes without allocating.
    public static let line: StaticString = "passkey: interrupted\n"
    /// The exit status (`ExitStatus.interrupted`).
    public static let status: Int32 = 130

    private static let handler: @convention(c) (Int32) -> Void = { _ in
        EchoRestoringSignals.restoreIfSaved()
        _ = Glibc.write(STDERR_FILENO, Interruption.line.utf8Start, Interruption.line.utf8CodeUnitCount)
        _exit(Interruption.status)
    }

    /// Makes SIGINT end the process as described above. Called once, before a command runs.
    public static func install() {
        _ = signal(SIGINT, handler)
    }

    /// Ends the process as SIGINT does, for a command that handled SIGINT itself and has stopped cleanly.
    public static func end() -> Never {
        EchoRestoringSignals.restoreIfSaved()
        Terminal.shared.write(line.description)
        exit(status)
    }
}
