import ChildProcessIO
import Foundation
import Synchronization

/// A process `passkey-bench relay --cluster` starts: with `posix_spawn` (`ChildProcessSpawn`), its signals at their
/// defaults (so a shell script can trap them), its standard error ours, and its standard input and output either ours or pipes to us.
/// Every child is kept in `ChildProcess.all` until it has been waited for, so that an error or a signal stops them
/// all (`stopAll`).
final class ChildProcess: Sendable {
    let name: String
    let pid: pid_t
    /// The write end of the child's standard input, or -1.
    private let input: Int32
    private let output: LineReader?
    private let status = Mutex<Int32?>(nil)

    /// Starts `arguments[0]` (looked up in PATH and /usr/sbin) with the rest as its arguments. With `log`, the
    /// child's standard error (and its standard output, without pipes) is appended to that file.
    init(name: String, arguments: [String], pipes: Bool, log: String? = nil) throws {
        guard let executable = Self.find(arguments[0]) else { throw BenchError("\(arguments[0]) not found") }
        var files = ChildProcessSpawn.SpawnedFiles()
        var ends: (toChild: (read: Int32, write: Int32), fromChild: (read: Int32, write: Int32))?
        do throws(ChildProcessSpawn.Failure) {
            if pipes {
                // A worker sees the end of its input only when every write end is closed: the pipes are
                // close-on-exec, so no other child inherits them.
                let toChild = try ChildProcessSpawn.pipe()
                let fromChild = try ChildProcessSpawn.pipe()
                ends = (toChild, fromChild)
                files.input = .descriptor(toChild.read)
                files.output = .descriptor(fromChild.write)
            }
            if let log {
                files.error = .appending(log)
                if !pipes { files.output = .sameAs(2) }
            }
        } catch {
            throw BenchError(error.description)
        }
        let started = Result { () throws(ChildProcessSpawn.Failure) in
            try ChildProcessSpawn.start(executable: executable, arguments: arguments, files: files)
        }
        if let ends {
            close(ends.toChild.read)
            close(ends.fromChild.write)
        }
        let pid: pid_t
        switch started {
        case .success(let started): pid = started
        case .failure(let failure):
            if let ends {
                close(ends.toChild.write)
                close(ends.fromChild.read)
            }
            throw BenchError(failure.description)
        }
        self.name = name
        self.pid = pid
        input = ends?.toChild.write ?? -1
        output = ends.map { LineReader(fileDescriptor: $0.fromChild.read) }
        Self.all.withLock { $0.append(self) }
    }

    deinit {
        if input >= 0 { close(input) }
    }

    /// Writes one line to the child's standard input.
    func send(_ line: String) throws {
        var bytes = Array((line + "\n").utf8)
        var offset = 0
        while offset < bytes.count {
            let written = bytes.withUnsafeMutableBytes { write(input, $0.baseAddress! + offset, $0.count - offset) }
            if written < 0 && errno == EINTR { continue }
            guard written > 0 else { throw BenchError("\(name) (pid \(pid)) does not read its input any more") }
            offset += written
        }
        bytes.removeAll()
    }

    /// The next line of the child's standard output.
    func readLine() async throws -> String {
        guard let output, let line = await output.next() else {
            throw BenchError("\(name) (pid \(pid)) ended its output (\(exitDescription))")
        }
        return line
    }

    /// Sends `signal` unless the child has been waited for, then waits up to `grace` for it to exit and kills it
    /// after that. Returns the wait status.
    @discardableResult
    func stop(signal: Int32 = SIGTERM, grace: Duration = .seconds(10)) -> Int32 {
        if let status = status.withLock({ $0 }) { return status }
        kill(pid, signal)
        let deadline = ContinuousClock.now + grace
        while ContinuousClock.now < deadline {
            if let status = poll() { return status }
            usleep(20_000)
        }
        kill(pid, SIGKILL)
        while true {
            if let status = poll() { return status }
            usleep(20_000)
        }
    }

    /// Whether the child is still running (reaps it if not).
    var isRunning: Bool { status.withLock { $0 } == nil && poll() == nil }

    /// "exit status N", "signal N" or "running".
    var exitDescription: String {
        guard let status = status.withLock({ $0 }) ?? poll() else { return "running" }
        return WaitStatus(raw: status).description
    }

    private func poll() -> Int32? {
        status.withLock { status in
            if let status { return status }
            status = ChildProcessSpawn.poll(pid)?.raw
            return status
        }
    }

    private static func find(_ name: String) -> String? {
        if name.contains("/") { return FileManager.default.isExecutableFile(atPath: name) ? name : nil }
        let path = (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":")
        for directory in path.map(String.init) + ["/usr/sbin", "/sbin"] {
            let candidate = directory + "/" + name
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        }
        return nil
    }

    // MARK: Every child at once

    private static let all = Mutex<[ChildProcess]>([])

    /// Stops every child not yet waited for, the most recent first (load generators before the servers they
    /// load), and forgets them.
    static func stopAll() {
        let children = all.withLock { children in
            defer { children = [] }
            return children
        }
        for child in children.reversed() where child.isRunning { kill(child.pid, SIGTERM) }
        for child in children.reversed() { child.stop() }
    }

    /// Forgets children that have been waited for.
    static func forgetStopped() {
        all.withLock { children in children.removeAll { !$0.isRunning } }
    }

    /// The signal that stopped the bench, or 0.
    private static let signalReceived = Atomic<Int32>(0)

    /// On SIGINT, SIGTERM or SIGHUP: stops every child and exits with 128 + the signal's number.
    static func stopAllOnSignals() {
        _ = signalReceived.load(ordering: .relaxed)
        for signal in [SIGINT, SIGTERM, SIGHUP] {
            _ = Glibc.signal(signal) { number in ChildProcess.signalReceived.store(number, ordering: .relaxed) }
        }
        Thread.detachNewThread {
            while signalReceived.load(ordering: .relaxed) == 0 { usleep(50_000) }
            let number = signalReceived.load(ordering: .relaxed)
            FileHandle.standardError.write(Data("passkey-bench: signal \(number), stopping every child\n".utf8))
            stopAll()
            exit(128 + number)
        }
    }
}

/// Lines from a file descriptor; each read blocks a thread of its own, not one of Swift's concurrency pool.
final class LineReader: Sendable {
    private let fileDescriptor: Int32
    private let buffer = Mutex<[UInt8]>([])

    init(fileDescriptor: Int32) { self.fileDescriptor = fileDescriptor }

    deinit { close(fileDescriptor) }

    /// The next line without its newline; nil at the end of the input.
    func next() async -> String? {
        await withCheckedContinuation { continuation in
            Thread.detachNewThread { continuation.resume(returning: self.nextBlocking()) }
        }
    }

    func nextBlocking() -> String? {
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let line = buffer.withLock { bytes -> String? in
                guard let end = bytes.firstIndex(of: UInt8(ascii: "\n")) else { return nil }
                defer { bytes.removeSubrange(...end) }
                return String(decoding: bytes[..<end], as: UTF8.self)
            }
            if let line { return line }
            let count = chunk.withUnsafeMutableBytes { read(fileDescriptor, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { return nil }
            buffer.withLock { $0 += chunk[..<count] }
        }
    }
}

/// A line from this process's standard input, read on a thread of its own; nil at its end.
func readStandardInputLine() async -> String? {
    await withCheckedContinuation { continuation in
        Thread.detachNewThread { continuation.resume(returning: readLine()) }
    }
}

/// Writes a line to standard output at once (print's buffer is not flushed into a pipe until it fills).
func writeLine(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}
