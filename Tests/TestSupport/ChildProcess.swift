import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// A child process for a test: an executable with arguments, extra environment and optional standard input, its
/// standard output and error collected as they arrive, and a time limit after which `wait` kills it.
///
/// Nothing here blocks a thread of Swift's cooperative pool, which has only as many threads as cores and which
/// every other test shares: the pipes are read on dedicated threads, and waiting (for the exit or for a line)
/// suspends on a continuation that the termination handler, a reader or a timer resumes.
public final class ChildProcess: Sendable {
    /// How a child ended.
    public struct Termination: Sendable, Equatable, CustomStringConvertible {
        /// The exit status, or the number of the signal that ended the child.
        public var status: Int32
        /// Whether a signal ended the child (`status` is then the signal's number).
        public var signaled: Bool
        /// Whether `wait` killed the child because it outlived its time limit.
        public var timedOut: Bool

        /// The exit status of a child that exited by itself; `nil` after a signal.
        public var exitStatus: Int32? { signaled ? nil : status }

        public var description: String {
            (signaled ? "signal \(status)" : "exit status \(status)") + (timedOut ? " (killed: time limit)" : "")
        }
    }

    /// What a finished child wrote.
    public struct Output: Sendable {
        public var termination: Termination
        public var stdout: String
        public var stderr: String
    }

    /// One of the two output streams.
    public enum Stream: Sendable {
        case stdout
        case stderr
    }

    /// The child's process identifier.
    public let processIdentifier: Int32
    private let shared: Shared
    /// Kept for the life of the value; signals go to `processIdentifier`.
    private let process: Process

    /// Starts `executable`. `environment` is added to (and overrides) this process's environment; `input`, when
    /// given, is what the child reads on its standard input, then end-of-file (otherwise it reads /dev/null).
    public init(
        _ executable: URL, _ arguments: [String] = [], environment: [String: String] = [:], input: [UInt8]? = nil
    ) throws {
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        let stdout = Pipe()
        let stderr = Pipe()
        process.standardOutput = stdout
        process.standardError = stderr
        process.standardInput = try input.map(Self.inputFile) ?? FileHandle.nullDevice
        let shared = Shared()
        process.terminationHandler = { process in
            shared.terminated(
                status: process.terminationStatus, signaled: process.terminationReason == .uncaughtSignal)
        }
        try Self.withNoSignalsBlocked { try process.run() }
        self.process = process
        self.shared = shared
        processIdentifier = process.processIdentifier
        for (pipe, stream) in [(stdout, Stream.stdout), (stderr, Stream.stderr)] {
            let reading = pipe.fileHandleForReading
            Thread.detachNewThread {
                while true {
                    let data = reading.availableData
                    if data.isEmpty { break }
                    shared.append(Array(data), to: stream)
                }
                shared.ended(stream)
            }
        }
    }

    /// Runs `body` with this thread's signal mask empty. A child inherits the mask of the thread that spawns it, and
    /// the threads of Swift's pools block nearly every signal: without this, SIGTERM would never reach a child.
    private static func withNoSignalsBlocked(_ body: () throws -> Void) rethrows {
        var none = sigset_t()
        var previous = sigset_t()
        sigemptyset(&none)
        pthread_sigmask(SIG_SETMASK, &none, &previous)
        defer { pthread_sigmask(SIG_SETMASK, &previous, nil) }
        try body()
    }

    /// An unnamed temporary file holding `bytes`, open for reading from its start: standard input that needs no
    /// writer thread and cannot raise SIGPIPE when the child exits without reading it.
    private static func inputFile(_ bytes: [UInt8]) throws -> FileHandle {
        guard let file = tmpfile() else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        defer { fclose(file) }
        guard fwrite(bytes, 1, bytes.count, file) == bytes.count, fflush(file) == 0 else {
            throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO)
        }
        let descriptor = dup(fileno(file))
        guard descriptor >= 0, lseek(descriptor, 0, SEEK_SET) == 0 else {
            throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO)
        }
        return FileHandle(fileDescriptor: descriptor, closeOnDealloc: true)
    }

    /// Starts the executable at `path`.
    public convenience init(
        _ path: String, _ arguments: [String] = [], environment: [String: String] = [:], input: [UInt8]? = nil
    ) throws {
        try self.init(URL(fileURLWithPath: path), arguments, environment: environment, input: input)
    }

    /// A child still running when the last reference goes is killed.
    deinit {
        if !shared.hasTerminated { kill(processIdentifier, SIGKILL) }
    }

    /// Runs `path` to its end (killed after `timeout`) and returns how it ended and what it wrote.
    public static func run(
        _ path: String, _ arguments: [String] = [], environment: [String: String] = [:], input: [UInt8]? = nil,
        timeout: Duration = .seconds(60)
    ) async throws -> Output {
        let child = try ChildProcess(path, arguments, environment: environment, input: input)
        let termination = await child.wait(timeout: timeout)
        return Output(termination: termination, stdout: child.output, stderr: child.errors)
    }

    /// Standard output so far.
    public var output: String { shared.text(.stdout) }
    /// Standard error so far.
    public var errors: String { shared.text(.stderr) }

    /// The first complete line of standard output that `matches` (looking at what arrived before the call too);
    /// `nil` when none came within `timeout` or the stream ended first.
    public func stdoutLine(timeout: Duration, where matches: @escaping @Sendable (String) -> Bool = { _ in true })
        async -> String?
    {
        await shared.line(in: .stdout, timeout: timeout, where: matches)
    }

    /// The first complete line of standard error that `matches`, as ``stdoutLine(timeout:where:)``.
    public func stderrLine(timeout: Duration, where matches: @escaping @Sendable (String) -> Bool = { _ in true })
        async -> String?
    {
        await shared.line(in: .stderr, timeout: timeout, where: matches)
    }

    /// Waits for the child to end and for its output to be read. A child still running after `timeout` is killed
    /// (SIGKILL), and the result says so.
    @discardableResult
    public func wait(timeout: Duration = .seconds(60)) async -> Termination {
        let pid = processIdentifier
        let shared = shared
        return await withCheckedContinuation { continuation in
            guard let id = shared.addFinishWaiter(continuation) else { return }
            after(timeout) {
                if shared.timeLimitPassed(waiter: id) { kill(pid, SIGKILL) }
            }
        }
    }

    /// Sends `signal` to the child, unless it has ended.
    public func signal(_ signal: Int32) {
        if !shared.hasTerminated { kill(processIdentifier, signal) }
    }

    /// Asks the child to end (SIGTERM), unless it has ended.
    public func stop() { signal(SIGTERM) }

}

/// Runs `action` once `duration` has passed, on a thread of its own. Not a Dispatch timer: in a full test run on 2
/// busy cores, Linux's libdispatch may not give its global queue a thread for tens of seconds, and a time limit that
/// fires that late is no limit.
private func after(_ duration: Duration, _ action: @escaping @Sendable () -> Void) {
    Thread.detachNewThread {
        let (seconds, attoseconds) = duration.components
        var time = timespec(tv_sec: Int(clamping: seconds), tv_nsec: Int(attoseconds / 1_000_000_000))
        var left = timespec()
        while nanosleep(&time, &left) != 0, errno == EINTR { time = left }
        action()
    }
}

/// The state the readers, the termination handler, timers and waiters share.
private final class Shared: Sendable {
    typealias Finisher = CheckedContinuation<ChildProcess.Termination, Never>

    struct LineWaiter {
        var stream: ChildProcess.Stream
        var matches: @Sendable (String) -> Bool
        var continuation: CheckedContinuation<String?, Never>
    }

    struct State {
        var stdout: [UInt8] = []
        var stderr: [UInt8] = []
        var stdoutEnded = false
        var stderrEnded = false
        var termination: ChildProcess.Termination?
        var timedOut = false
        var nextID = 0
        var lineWaiters: [Int: LineWaiter] = [:]
        var finishWaiters: [Int: Finisher] = [:]

        func bytes(_ stream: ChildProcess.Stream) -> [UInt8] { stream == .stdout ? stdout : stderr }
        func ended(_ stream: ChildProcess.Stream) -> Bool { stream == .stdout ? stdoutEnded : stderrEnded }

        /// The first complete line of `stream` that `matches`.
        func line(in stream: ChildProcess.Stream, where matches: (String) -> Bool) -> String? {
            String(decoding: bytes(stream), as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false)
                .dropLast().lazy.map(String.init).first(where: matches)
        }

        /// The termination, once the child has ended and both streams are read to their end.
        var finished: ChildProcess.Termination? {
            guard stdoutEnded, stderrEnded, var termination else { return nil }
            termination.timedOut = timedOut
            return termination
        }

        /// Takes the line waiters that can be answered now, with their answers.
        mutating func answerableLineWaiters() -> [(CheckedContinuation<String?, Never>, String?)] {
            var answers: [(CheckedContinuation<String?, Never>, String?)] = []
            for (id, waiter) in lineWaiters {
                if let line = line(in: waiter.stream, where: waiter.matches) {
                    answers.append((waiter.continuation, line))
                } else if ended(waiter.stream) {
                    answers.append((waiter.continuation, nil))
                } else {
                    continue
                }
                lineWaiters[id] = nil
            }
            return answers
        }

        /// Takes the finish waiters if the child has finished.
        mutating func answerableFinishWaiters() -> [Finisher] {
            guard finished != nil else { return [] }
            defer { finishWaiters = [:] }
            return Array(finishWaiters.values)
        }
    }

    let state = Mutex(State())

    var hasTerminated: Bool { state.withLock { $0.termination != nil } }

    func text(_ stream: ChildProcess.Stream) -> String {
        String(decoding: state.withLock { $0.bytes(stream) }, as: UTF8.self)
    }

    func append(_ bytes: [UInt8], to stream: ChildProcess.Stream) {
        let answers = state.withLock { state in
            if stream == .stdout { state.stdout += bytes } else { state.stderr += bytes }
            return state.answerableLineWaiters()
        }
        for (continuation, line) in answers { continuation.resume(returning: line) }
    }

    func ended(_ stream: ChildProcess.Stream) {
        update { state in
            if stream == .stdout { state.stdoutEnded = true } else { state.stderrEnded = true }
        }
    }

    func terminated(status: Int32, signaled: Bool) {
        update { $0.termination = ChildProcess.Termination(status: status, signaled: signaled, timedOut: false) }
    }

    private func update(_ change: (inout State) -> Void) {
        let (lines, finishers, termination) = state.withLock { state in
            change(&state)
            return (state.answerableLineWaiters(), state.answerableFinishWaiters(), state.finished)
        }
        for (continuation, line) in lines { continuation.resume(returning: line) }
        if let termination {
            for continuation in finishers { continuation.resume(returning: termination) }
        }
    }

    func line(in stream: ChildProcess.Stream, timeout: Duration, where matches: @escaping @Sendable (String) -> Bool)
        async -> String?
    {
        await withCheckedContinuation { continuation in
            // Answered at once if the line is already there or the stream has ended.
            let (id, answers) = state.withLock { state in
                state.nextID += 1
                state.lineWaiters[state.nextID] = LineWaiter(
                    stream: stream, matches: matches, continuation: continuation)
                return (state.nextID, state.answerableLineWaiters())
            }
            for (continuation, line) in answers { continuation.resume(returning: line) }
            after(timeout) { [self] in
                let waiter = state.withLock { $0.lineWaiters.removeValue(forKey: id) }
                waiter?.continuation.resume(returning: nil)
            }
        }
    }

    /// Registers a waiter for the end; answers it at once (and returns `nil`) if the child has finished.
    func addFinishWaiter(_ continuation: Finisher) -> Int? {
        let (id, finished) = state.withLock { state -> (Int?, ChildProcess.Termination?) in
            if let finished = state.finished { return (nil, finished) }
            state.nextID += 1
            state.finishWaiters[state.nextID] = continuation
            return (state.nextID, nil)
        }
        if let finished { continuation.resume(returning: finished) }
        return id
    }

    /// At a waiter's time limit: whether the child is still running (then it is to be killed, and its termination
    /// will say that the time limit killed it). A child that has ended but whose output has not (a grandchild
    /// holds the pipe) gets its waiter answered now.
    func timeLimitPassed(waiter id: Int) -> Bool {
        let (shouldKill, answer) = state.withLock { state -> (Bool, (Finisher, ChildProcess.Termination)?) in
            guard let waiter = state.finishWaiters[id] else { return (false, nil) }
            guard let termination = state.termination else {
                state.timedOut = true
                return (true, nil)
            }
            state.finishWaiters[id] = nil
            return (false, (waiter, termination))
        }
        if let (continuation, termination) = answer { continuation.resume(returning: termination) }
        return shouldKill
    }
}
