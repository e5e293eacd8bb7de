import Foundation
import PublicSuffix
import Testing
import WebAuthnClientIO

/// Where the list comes from, and the clear errors when it is not there.
struct PublicSuffixListFileTests {
    static func temporaryFile(_ contents: [UInt8]) throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("psl-\(UUID().uuidString).dat").path
        try Data(contents).write(to: URL(fileURLWithPath: path))
        return path
    }

    @Test func theEnvironmentNamesTheFileElseTheSystemCopy() {
        #expect(PublicSuffixListFile.path(environment: [:]) == "/usr/share/publicsuffix/public_suffix_list.dat")
        #expect(
            PublicSuffixListFile.path(environment: ["PASSKEY_PUBLIC_SUFFIX_LIST": ""])
                == PublicSuffixListFile.systemPath)
        #expect(
            PublicSuffixListFile.path(environment: ["PASSKEY_PUBLIC_SUFFIX_LIST": "/tmp/list.dat"]) == "/tmp/list.dat")
    }

    @Test func readsTheFileTheEnvironmentNames() throws {
        let path = try Self.temporaryFile(Array("com\n// ===BEGIN PRIVATE DOMAINS===\ngithub.io\n".utf8))
        defer { try? FileManager.default.removeItem(atPath: path) }
        let list = try PublicSuffixListFile.load(environment: ["PASSKEY_PUBLIC_SUFFIX_LIST": path])
        #expect(list.rules.map(\.description) == ["com", "github.io"])
    }

    @Test(.enabled(if: FileManager.default.fileExists(atPath: PublicSuffixListFile.systemPath)))
    func readsTheSystemCopy() throws {
        let list = try PublicSuffixListFile.load(environment: [:])
        #expect(list.rules.count > 6_000)
    }

    @Test func aMissingFileSaysWhatToDo() {
        do {
            _ = try PublicSuffixListFile.load(environment: ["PASSKEY_PUBLIC_SUFFIX_LIST": "/nonexistent/list.dat"])
            Issue.record("loaded a list that does not exist")
        } catch {
            #expect(error.code == .missing)
            #expect(error.description.contains("/nonexistent/list.dat"))
            #expect(error.description.contains("PASSKEY_PUBLIC_SUFFIX_LIST"))
        }
        do {
            _ = try PublicSuffixListFile.load(path: "/nonexistent/list.dat", hint: ": install Debian's publicsuffix")
        } catch {
            #expect(error.description.hasSuffix("install Debian's publicsuffix"))
        }
    }

    @Test func otherFilesAreRefused() throws {
        #expect(throws: PublicSuffixListFileError(.unreadable, "")) {
            try PublicSuffixListFile.load(path: FileManager.default.temporaryDirectory.path)
        }
        #expect(throws: PublicSuffixListFileError(.tooLarge, "")) { try PublicSuffixListFile.load(path: "/dev/zero") }
        let garbage = try Self.temporaryFile(Array("com\nex ample\n!net\n".utf8))
        defer { try? FileManager.default.removeItem(atPath: garbage) }
        do {
            _ = try PublicSuffixListFile.load(path: garbage)
            Issue.record("loaded a list with a bad line")
        } catch {
            #expect(error.code == .invalid)
            #expect(error.description.contains("line 3"))
        }
        let binary = try Self.temporaryFile([0xFF, 0xFE, 0x00, 0x63])
        defer { try? FileManager.default.removeItem(atPath: binary) }
        #expect(throws: PublicSuffixListFileError(.invalid, "")) { try PublicSuffixListFile.load(path: binary) }
        let empty = try Self.temporaryFile([])
        defer { try? FileManager.default.removeItem(atPath: empty) }
        #expect(throws: PublicSuffixListFileError(.invalid, "")) { try PublicSuffixListFile.load(path: empty) }
    }
}
