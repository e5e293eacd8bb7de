import CTAP2
import Foundation
import PasskeyFilesIO
import PasskeyStoreIO
import Synchronization

/// Opening a store file that someone else wrote: damaged, truncated or hostile.
enum StoreTargets {
    private static let passphrase = "fuzz-passphrase"

    /// A directory of this process's own, emptied before each run.
    private static let directory: URL = {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent(
            "passkey-fuzz-store-\(ProcessInfo.processInfo.processIdentifier)", isDirectory: true)
        try? FileManager.default.createDirectory(
            at: url, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        return url
    }()

    /// Numbers the files, so that runs on several threads (the corpus replay tests) never share one.
    private static let runs = Atomic<Int>(0)

    /// A new file name in `directory`.
    private static func freshURL(_ kind: String) -> URL {
        let number = runs.wrappingAdd(1, ordering: .relaxed).oldValue
        return directory.appendingPathComponent("\(kind)-\(number).passkeys")
    }

    private static func clear(_ url: URL) {
        for suffix in ["", "-wal", "-shm", "-journal"] {
            try? FileManager.default.removeItem(atPath: url.path + suffix)
        }
        // Opening a store writes its index of names beside it, and changes may leave the index's journal.
        let files = PasskeyFiles(store: url)
        for file in [files.identityIndex, files.identityJournal] {
            try? FileManager.default.removeItem(at: file)
        }
    }

    /// The file's bytes, read with POSIX calls: Foundation's `Data(contentsOf:)` leaks a 4 KiB buffer for an empty
    /// file (swift-foundation's `readBytesFromFile`, found by this target), which LeakSanitizer reports.
    private static func contents(of path: String) -> [UInt8]? {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            guard count >= 0 else { return nil }
            if count == 0 { return bytes }
            bytes += buffer[..<count]
        }
    }

    static let storeFile: FuzzTarget = FuzzTarget(
        name: "store",
        summary: "opening a mutated store file: refused with the file unchanged, or opened and fully readable",
        seeds: {
            let url = freshURL("seed")
            clear(url)
            defer { clear(url) }
            guard let store = try? SQLiteCredentialStore.create(at: url, passphrase: passphrase, kdf: .testing)
            else { return [] }
            let authenticator = Authenticator(
                environment: AuthenticatorEnvironment(store: store, userInteraction: UnattendedApproval()))
            for seed in CTAPTargets.ctap2.seeds().prefix(2) {
                var messages = FuzzInput(seed)
                while let message = messages.chunk() { _ = runBlocking { await authenticator.handle(message) } }
            }
            store.close()
            return [contents(of: url.path)].compactMap { $0 }
        },
        run: { input in
            let url = freshURL("store")
            clear(url)
            defer { clear(url) }
            guard FileManager.default.createFile(atPath: url.path, contents: Data(input)) else {
                fatalError("fuzz invariant broken: cannot write \(url.path)")
            }
            do {
                let store = try SQLiteCredentialStore.open(at: url, passphrase: passphrase)
                defer { store.close() }
                _ = try? store.allCredentials()
                _ = try? store.settings()
                _ = try? store.largeBlobArray()
                _ = try? store.passwordEntries()
            } catch {
                expect(contents(of: url.path) == input, "a refused store file was changed (\(error))")
            }
        })
}

/// The files and identifiers the password vault reads from others: the domain approval table another program writes
/// beside the store, and the service identifiers a user or an app names.
enum PasswordTargets {
    static let passwordService: FuzzTarget = FuzzTarget(
        name: "password-service",
        summary: "a service identifier: refused, or normalized once and for all (parsing the result gives it back)",
        seeds: {
            [
                "example.com", "Example.COM", "https://example.com:8443/", "https://EXAMPLE.com:443",
                "ABCDE12345.com.example.app", "http://example.com", "https://user@example.com/path",
            ].map { Array($0.utf8) }
        },
        run: { input in
            guard let text = String(validating: input, as: UTF8.self), let service = PasswordService(text) else {
                return
            }
            let again = PasswordService(service.text)
            expect(again == service, "a normalized service identifier does not parse to itself")
            if service.kind != .app {
                expect(service.host.map { PasswordService($0)?.kind == .domain } ?? false, "no host for \(service)")
            }
        })
}
