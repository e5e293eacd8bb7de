import Foundation
import PublicSuffix
import TestSupport
import Testing
import WebAuthnClientIO

/// Where the list comes from, and the clear errors when it is not there.
struct PublicSuffixListFileTests {
    let directory: TemporaryDirectory

    init() throws { directory = try TemporaryDirectory(prefix: "psl-file") }

    @Test func theEnvironmentNamesTheFileElseTheSystemCopy() {
        #expect(PublicSuffixListFile.path(environment: [:]) == "/usr/share/publicsuffix/public_suffix_list.dat")
        #expect(
            PublicSuffixListFile.path(environment: ["PASSKEY_PUBLIC_SUFFIX_LIST": ""])
                == PublicSuffixListFile.systemPath)
        #expect(
            PublicSuffixListFile.path(environment: ["PASSKEY_PUBLIC_SUFFIX_LIST": "/tmp/list.dat"]) == "/tmp/list.dat")
    }

    @Test func readsTheFileTheEnvironmentNames() throws {
        let path = try directory.write(Array("com\n// ===BEGIN PRIVATE DOMAINS===\ngithub.io\n".utf8), to: "list.dat")
        let list = try PublicSuffixListFile.load(environment: ["PASSKEY_PUBLIC_SUFFIX_LIST": path])
        #expect(list.rules.map(\.description) == ["com", "github.io"])
    }

    @Test func readsTheSystemCopy() throws {
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
            try PublicSuffixListFile.load(path: directory.path)
        }
        #expect(throws: PublicSuffixListFileError(.tooLarge, "")) { try PublicSuffixListFile.load(path: "/dev/zero") }
        let garbage = try directory.write(Array("com\nex ample\n!net\n".utf8), to: "garbage.dat")
        do {
            _ = try PublicSuffixListFile.load(path: garbage)
            Issue.record("loaded a list with a bad line")
        } catch {
            #expect(error.code == .invalid)
            #expect(error.description.contains("line 3"))
        }
        let binary = try directory.write([0xFF, 0xFE, 0x00, 0x63], to: "binary.dat")
        #expect(throws: PublicSuffixListFileError(.invalid, "")) { try PublicSuffixListFile.load(path: binary) }
        let empty = try directory.write([], to: "empty.dat")
        #expect(throws: PublicSuffixListFileError(.invalid, "")) { try PublicSuffixListFile.load(path: empty) }
    }
}
