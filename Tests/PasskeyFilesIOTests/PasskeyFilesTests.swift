import Foundation
import PasskeyFilesIO
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// The registry: every file's name, and the default store's place from the environment.
struct PasskeyFilesTests {
    @Test func everyFileIsNamedBesideTheStore() {
        let files = PasskeyFiles(store: URL(fileURLWithPath: "/data/passkey/passkeys.sqlite"))
        let expected: [PasskeyFiles.File: String] = [
            .store: "/data/passkey/passkeys.sqlite",
            .lock: "/data/passkey/passkeys.sqlite.lock",
            .identityIndex: "/data/passkey/passkeys.index.json",
            .identityJournal: "/data/passkey/passkeys.index.journal",
            .phoneLinks: "/data/passkey/passkeys.phone-links.sealed",
            .computerLinks: "/data/passkey/passkeys.computer-links.sealed",
            .clearComputerLinks: "/data/passkey/links.json",
            .domainApprovals: "/data/passkey/domains.json",
            .relyingPartyState: "/data/passkey/rp-state.json",
        ]
        #expect(Set(expected.keys) == Set(PasskeyFiles.File.allCases))
        for file in PasskeyFiles.File.allCases {
            #expect(files.url(file).path == expected[file], "\(file)")
        }
        // No two files share a name.
        #expect(Set(PasskeyFiles.File.allCases.map { files.url($0).path }).count == PasskeyFiles.File.allCases.count)
    }

    @Test func filesNamedAfterAStoreWithoutExtensionOrWithDotsInThePath() {
        let plain = PasskeyFiles(store: URL(fileURLWithPath: "/data/work"))
        #expect(plain.identityIndex.path == "/data/work.index.json")
        #expect(plain.phoneLinks.path == "/data/work.phone-links.sealed")
        let dotted = PasskeyFiles(store: URL(fileURLWithPath: "/data/x/../keys/./my.store.sqlite"))
        #expect(dotted.store.path == "/data/keys/my.store.sqlite")
        #expect(dotted.identityIndex.path == "/data/keys/my.store.index.json")
        #expect(dotted.lock.path == "/data/keys/my.store.sqlite.lock")
    }

    @Test func theSettingsFileIsInTheConfigurationDirectory() {
        #expect(
            PasskeyFiles.settingsFile(environment: ["XDG_CONFIG_HOME": "/c", "HOME": "/h"]).path
                == "/c/passkey/settings.toml")
        // A relative XDG_CONFIG_HOME is ignored, as the XDG base directory spec asks.
        #expect(
            PasskeyFiles.settingsFile(environment: ["XDG_CONFIG_HOME": "c", "HOME": "/h"]).path
                == "/h/.config/passkey/settings.toml")
        // The store's place does not move it: the file says where the store is.
        #expect(
            PasskeyFiles.settingsFile(environment: ["PASSKEY_STORE": "/s/x.sqlite", "HOME": "/h"]).path
                == "/h/.config/passkey/settings.toml")
    }

    @Test func theDefaultStoreFollowsTheEnvironment() {
        #expect(
            PasskeyFiles.defaultStore(environment: ["PASSKEY_STORE": "/srv/keys.db", "XDG_DATA_HOME": "/x"]).path
                == "/srv/keys.db")
        #expect(
            PasskeyFiles.defaultStore(environment: ["XDG_DATA_HOME": "/data", "HOME": "/home/u"]).path
                == "/data/passkey/passkeys.sqlite")
        // A relative XDG_DATA_HOME is invalid and ignored, as is an empty PASSKEY_STORE.
        #expect(
            PasskeyFiles.defaultStore(environment: [
                "PASSKEY_STORE": "", "XDG_DATA_HOME": "relative", "HOME": "/home/u",
            ])
            .path == "/home/u/.local/share/passkey/passkeys.sqlite")
        #expect(
            PasskeyFiles.defaultStore(environment: ["HOME": "/home/u"]).path
                == "/home/u/.local/share/passkey/passkeys.sqlite")
        #expect(PasskeyFiles.defaultStore(environment: [:]).path.hasSuffix("/passkey/passkeys.sqlite"))
        #expect(
            PasskeyFiles(environment: ["PASSKEY_STORE": "/srv/keys.db"]).computerLinks.path
                == "/srv/keys.computer-links.sealed")
    }
}

/// The one owner-only reader and writer.
struct OwnerOnlyFileTests {
    private func mode(_ url: URL) throws -> mode_t {
        var info = stat()
        try #require(lstat(url.path, &info) == 0)
        return info.st_mode & 0o7777
    }

    @Test func writesReplaceWholeAsOwnerOnlyAndMakePrivateDirectories() throws {
        let directory = try TemporaryDirectory()
        let file = directory.url.appendingPathComponent("a/b/links.json")
        try OwnerOnlyFile.write(Array("first".utf8), to: file)
        #expect(try OwnerOnlyFile.read(file, limit: 100) == Array("first".utf8))
        #expect(try mode(file) == 0o600)
        #expect(try mode(file.deletingLastPathComponent()) == 0o700)
        #expect(try mode(file.deletingLastPathComponent().deletingLastPathComponent()) == 0o700)
        // A loose mode on the old file does not survive a replace; no temporary file stays behind.
        try #require(chmod(file.path, 0o644) == 0)
        try OwnerOnlyFile.write(Array("second".utf8), to: file)
        #expect(try OwnerOnlyFile.read(file, limit: 100) == Array("second".utf8))
        #expect(try mode(file) == 0o600)
        #expect(
            try FileManager.default.contentsOfDirectory(atPath: file.deletingLastPathComponent().path) == ["links.json"]
        )
    }

    @Test func aMissingFileReadsAsNilAndRemovesQuietly() throws {
        let directory = try TemporaryDirectory()
        let file = directory.url.appendingPathComponent("none.json")
        #expect(try OwnerOnlyFile.read(file, limit: 10) == nil)
        try OwnerOnlyFile.remove(file)
        try OwnerOnlyFile.append(Array("x\n".utf8), to: file)
        try OwnerOnlyFile.append(Array("y\n".utf8), to: file)
        #expect(try OwnerOnlyFile.read(file, limit: 10) == Array("x\ny\n".utf8))
        #expect(try mode(file) == 0o600)
        try OwnerOnlyFile.remove(file)
        #expect(try OwnerOnlyFile.read(file, limit: 10) == nil)
    }

    @Test func createNeverReplaces() throws {
        let directory = try TemporaryDirectory()
        let file = directory.url.appendingPathComponent("key.jwk")
        try OwnerOnlyFile.create(Array("secret".utf8), at: file)
        #expect(try mode(file) == 0o600)
        let error = #expect(throws: OwnerOnlyFileError.self) { try OwnerOnlyFile.create(Array("other".utf8), at: file) }
        #expect(error?.reason == "it already exists; not replacing it")
        #expect(try OwnerOnlyFile.read(file, limit: 100) == Array("secret".utf8))

        // A file meant for others (a public key, a signed association file) gets exactly its mode, umask or not,
        // and is never written through a symbolic link.
        let previous = umask(0o077)
        defer { umask(previous) }
        let publicFile = directory.url.appendingPathComponent("key.pub.jwk")
        try OwnerOnlyFile.create(Array("public".utf8), at: publicFile, mode: 0o644)
        #expect(try mode(publicFile) == 0o644)
        let link = directory.url.appendingPathComponent("link.jwk")
        try #require(symlink(directory.url.appendingPathComponent("elsewhere").path, link.path) == 0)
        #expect(throws: OwnerOnlyFileError.self) { try OwnerOnlyFile.create([1], at: link, mode: 0o644) }
        #expect(!FileManager.default.fileExists(atPath: directory.url.appendingPathComponent("elsewhere").path))
    }

    @Test func readingRefusesWhatItCannotTrust() throws {
        let directory = try TemporaryDirectory()
        let target = directory.url.appendingPathComponent("real.json")
        try OwnerOnlyFile.write(Array("{}".utf8), to: target)

        let link = directory.url.appendingPathComponent("link.json")
        try FileManager.default.createSymbolicLink(at: link, withDestinationURL: target)
        #expect(throws: OwnerOnlyFileError(link.path, "it is a symbolic link")) {
            try OwnerOnlyFile.read(link, limit: 100)
        }

        let folder = directory.url.appendingPathComponent("folder.json")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: false)
        #expect(throws: OwnerOnlyFileError(folder.path, "it is not a regular file")) {
            try OwnerOnlyFile.read(folder, limit: 100)
        }

        try #require(chmod(target.path, 0o666) == 0)
        #expect(throws: OwnerOnlyFileError(target.path, "other users may change it (mode 666); chmod 600 it")) {
            try OwnerOnlyFile.read(target, limit: 100)
        }
        try #require(chmod(target.path, 0o600) == 0)

        try OwnerOnlyFile.write([UInt8](repeating: 0x20, count: 2 << 10), to: target)
        #expect(throws: OwnerOnlyFileError(target.path, "it is larger than 1 KiB")) {
            try OwnerOnlyFile.read(target, limit: 1 << 10)
        }
        #expect(try OwnerOnlyFile.read(target, limit: 2 << 10)?.count == 2 << 10)
    }

    @Test func aFileOfAnotherUserIsRefused() throws {
        let directory = try TemporaryDirectory()
        let file = directory.url.appendingPathComponent("theirs.json")
        try OwnerOnlyFile.write(Array("{}".utf8), to: file)
        // Only root can give a file away; as anyone else, a file of another user is found in /etc.
        if geteuid() == 0 {
            try #require(chown(file.path, 65534, 65534) == 0)
            #expect(throws: OwnerOnlyFileError(file.path, "it belongs to another user")) {
                try OwnerOnlyFile.read(file, limit: 100)
            }
        } else {
            let passwd = URL(fileURLWithPath: "/etc/passwd")
            #expect(throws: OwnerOnlyFileError(passwd.path, "it belongs to another user")) {
                try OwnerOnlyFile.read(passwd, limit: 1 << 20)
            }
        }
    }

    @Test func writingWhereNoDirectoryCanBeMadeFailsWithTheReason() throws {
        let directory = try TemporaryDirectory()
        let blocker = directory.url.appendingPathComponent("blocker")
        try OwnerOnlyFile.write([1], to: blocker)
        let file = blocker.appendingPathComponent("links.json")
        #expect(throws: OwnerOnlyFileError(blocker.path, "it is not a directory")) {
            try OwnerOnlyFile.write([1], to: file)
        }
    }
}
