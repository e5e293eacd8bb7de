import Foundation

/// A `passkey-relay` child process listening on a free loopback port; `stop()` ends it with SIGINT.
struct RelayProcess {
    let path: String
    let port: Int
    private let process: Process

    var pid: Int32 { process.processIdentifier }

    /// `path`, or the `passkey-relay` next to this executable.
    static func executable(_ path: String?) throws -> String {
        let found =
            path
            ?? URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent()
            .appendingPathComponent("passkey-relay").path
        guard FileManager.default.isExecutableFile(atPath: found) else {
            throw BenchError("passkey-relay not found at \(found): swift build -c release --product passkey-relay")
        }
        return found
    }

    /// Starts `path --listen 127.0.0.1:0 ARGUMENTS…` and waits for its `listening on` line, which names the port.
    init(path: String, arguments: [String]) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: path)
        process.arguments = ["--listen", "127.0.0.1:0"] + arguments
        let stdout = Pipe()
        process.standardOutput = stdout
        try process.run()
        var line: [UInt8] = []
        while let byte = try stdout.fileHandleForReading.read(upToCount: 1)?.first, byte != UInt8(ascii: "\n") {
            line.append(byte)
        }
        let text = String(decoding: line, as: UTF8.self)
        guard text.hasPrefix("listening on ws://127.0.0.1:"), let port = Int(text.split(separator: ":").last ?? "")
        else {
            kill(process.processIdentifier, SIGTERM)
            process.waitUntilExit()
            throw BenchError("passkey-relay did not start: \(text)")
        }
        self.path = path
        self.port = port
        self.process = process
    }

    /// Ends the relay at once (SIGINT: SIGTERM would drain, waiting for the bench's tunnels), waits for it and
    /// returns its exit status.
    @discardableResult
    func stop() -> Int32 {
        if process.isRunning {
            kill(process.processIdentifier, SIGINT)
            process.waitUntilExit()
        }
        return process.terminationStatus
    }
}
