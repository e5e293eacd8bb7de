import Foundation
import TestSupport
import Testing

@testable import TerminalIO

/// Files named on the command line, read with a limit.
struct CommandInputTests {
    @Test func aFileIsReadUpToOneByteOverTheLimit() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = try directory.write(Array(repeating: 0x41, count: 300_000), to: "big")
        #expect(try CommandInput.read(path, limit: 100, what: "file").count == 101)
        #expect(try CommandInput.read(path, limit: 300_000, what: "file").count == 300_000)
        #expect(try CommandInput.readWhole(path, limit: 300_000, what: "file").count == 300_000)
        #expect(throws: CommandInput.ReadError(description: "the options file \(path) is larger than 1000 bytes")) {
            try CommandInput.readWhole(path, limit: 1000, what: "options file")
        }
    }

    @Test func aMissingFileOrADirectoryIsAClearError() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        #expect(
            throws: CommandInput.ReadError(description: "cannot read the page \(directory.path)/none: no such file")
        ) {
            try CommandInput.read(directory.file("none"), limit: 10, what: "page")
        }
        #expect(
            throws: CommandInput.ReadError(description: "cannot read the page \(directory.path): it is a directory")
        ) {
            try CommandInput.read(directory.path, limit: 10, what: "page")
        }
        // A hostile name reaches the terminal escaped.
        #expect(throws: CommandInput.ReadError(description: "cannot read the page x\\u{1B}[2J: no such file")) {
            try CommandInput.read("x\u{1B}[2J", limit: 10, what: "page")
        }
    }
}
