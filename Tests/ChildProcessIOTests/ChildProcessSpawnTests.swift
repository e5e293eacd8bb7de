import ChildProcessIO
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

@Suite struct ChildProcessSpawnTests {
    /// Everything `descriptor` gives until its end.
    func readAll(_ descriptor: Int32) -> String {
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = read(descriptor, &buffer, buffer.count)
            guard count > 0 else { break }
            bytes += buffer[..<count]
        }
        close(descriptor)
        return String(decoding: bytes, as: UTF8.self)
    }

    @Test func theExitStatusAndTheSignalAreTold() throws {
        let exited = try ChildProcessSpawn.start(
            executable: "/bin/sh", arguments: ["sh", "-c", "exit 3"], files: .init(input: .null))
        let status = try #require(ChildProcessSpawn.wait(exited, until: .now + .seconds(30)))
        #expect(status.exitStatus == 3 && status.signal == nil && status.description == "exit status 3")

        let killed = try ChildProcessSpawn.start(
            executable: "/bin/sh", arguments: ["sh", "-c", "kill -TERM $$"], files: .init(input: .null))
        let signalled = try #require(ChildProcessSpawn.wait(killed, until: .now + .seconds(30)))
        #expect(signalled.exitStatus == nil && signalled.signal == SIGTERM && signalled.description == "signal 15")
    }

    @Test func inputAndOutputGoThroughPipes() throws {
        let toChild = try ChildProcessSpawn.pipe()
        let fromChild = try ChildProcessSpawn.pipe()
        let pid = try ChildProcessSpawn.start(
            executable: "/bin/cat", arguments: ["cat"],
            files: .init(input: .descriptor(toChild.read), output: .descriptor(fromChild.write), error: .null))
        close(toChild.read)
        close(fromChild.write)
        let text = Array("one line\n".utf8)
        #expect(text.withUnsafeBytes { write(toChild.write, $0.baseAddress, $0.count) } == text.count)
        close(toChild.write)
        #expect(readAll(fromChild.read) == "one line\n")
        #expect(ChildProcessSpawn.wait(pid, until: .now + .seconds(30))?.exitStatus == 0)
    }

    @Test func theChildGetsSignalsThisProcessIgnoresAtTheirDefaults() throws {
        // SIGINT ignored here (as `passkey` ignores it while a clipboard command runs) is at its default there: the
        // child's `trap -p` lists no trap, and SIGINT ends it.
        let previous = signal(SIGINT, SIG_IGN)
        defer { signal(SIGINT, previous) }
        let pid = try ChildProcessSpawn.start(
            executable: "/bin/sh", arguments: ["sh", "-c", "kill -INT $$; exit 0"], files: .init(input: .null))
        #expect(ChildProcessSpawn.wait(pid, until: .now + .seconds(30))?.signal == SIGINT)
    }

    @Test func standardOutputCanJoinAnAppendedLog() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(UUID().uuidString)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let log = directory.appendingPathComponent("child.log").path
        try Data("before\n".utf8).write(to: URL(fileURLWithPath: log))
        let pid = try ChildProcessSpawn.start(
            executable: "/bin/sh", arguments: ["sh", "-c", "echo out; echo err >&2"],
            files: .init(input: .null, output: .sameAs(2), error: .appending(log)))
        #expect(ChildProcessSpawn.wait(pid, until: .now + .seconds(30))?.exitStatus == 0)
        #expect(try String(contentsOfFile: log, encoding: .utf8) == "before\nout\nerr\n")
    }

    @Test func aProgramThatIsNotThereSaysSo() {
        #expect(throws: ChildProcessSpawn.Failure.self) {
            try ChildProcessSpawn.start(
                executable: "/nonexistent/program", arguments: ["program"], files: .init(input: .null))
        }
    }

    @Test func aChildPastItsDeadlineIsKilled() throws {
        let pid = try ChildProcessSpawn.start(
            executable: "/bin/sleep", arguments: ["sleep", "30"], files: .init(input: .null))
        let started = ContinuousClock.now
        #expect(ChildProcessSpawn.wait(pid, until: .now + .milliseconds(200)) == nil)
        #expect(ContinuousClock.now - started < .seconds(10))
        #expect(kill(pid, 0) != 0)
    }
}
