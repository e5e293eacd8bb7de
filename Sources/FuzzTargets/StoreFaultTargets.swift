import Basics
import CSQLiteFaults
import CTAP2
import Crypto
import Foundation
import PasskeyFilesIO
import PasskeyStoreIO
import Synchronization

/// The SQLite store, and the importer that writes into it, while the disk fails: reads, writes, truncations and
/// syncs fail on calls the input chooses (`CSQLiteFaults`, a VFS over SQLite's own). After every change the store
/// holds the change whole or not at all, and holds the same after it is closed and opened again.
enum StoreFaultTargets {
    private static let passphrase = "fuzz-passphrase"

    /// Makes every SQLite connection of the process go through the fault VFS (a faithful pass-through on threads
    /// without a plan), once.
    private static let installed: Bool = passkey_sqlite_faults_install() == 0

    /// What the target compares: a passkey as the store lists it, keys left out.
    struct Row: Hashable {
        var relyingPartyID: String
        var userHandle: [UInt8]
        var userName: String?
        var isDiscoverable: Bool
        /// Hidden by a signal (`setHidden`).
        var isHidden: Bool

        init(
            relyingPartyID: String, userHandle: [UInt8], userName: String?, isDiscoverable: Bool, isHidden: Bool = false
        ) {
            self.relyingPartyID = relyingPartyID
            self.userHandle = userHandle
            self.userName = userName
            self.isDiscoverable = isDiscoverable
            self.isHidden = isHidden
        }

        init(_ credential: StoredCredential) {
            relyingPartyID = credential.relyingPartyID
            userHandle = credential.userHandle
            userName = credential.userName
            isDiscoverable = credential.isDiscoverable
            isHidden = credential.hiddenDate != nil
        }
    }

    /// The passkeys by credential ID, and the saved passwords and one-time codes an import adds, each under a key of
    /// its own (`loginKey`), longer than any credential ID here.
    typealias Rows = [[UInt8]: Row]

    /// The key of a saved password (`kind` 1) or one-time code (2) of `user` at `service` in `Rows`.
    static func loginKey(_ kind: UInt8, service: String, user: String) -> [UInt8] {
        [0xFF, kind] + Array("\(service)|\(user)".utf8)
    }

    /// A login row: the service and user name.
    static func loginRow(service: String, user: String) -> Row {
        Row(relyingPartyID: service, userHandle: [], userName: user, isDiscoverable: false)
    }

    /// What an import brings besides its passkeys: a password and a one-time code for the login of each passkey with
    /// an odd ID, so that imports also write (and collide on) the passwords and codes tables.
    static func logins(of credentials: [StoredCredential]) -> [(service: PasswordService, user: String)] {
        credentials.filter { $0.id[0] & 1 == 1 }.compactMap { credential in
            PasswordService(credential.relyingPartyID).map { ($0, credential.userName ?? "") }
        }
    }

    /// One change, as the input spells it: an operation byte, then its arguments.
    enum Change {
        case save(StoredCredential)
        case importing([StoredCredential])
        case delete([UInt8])
        case rename([UInt8], String?)
        /// A signal hides the passkey, or it is shown again.
        case hide([UInt8], Bool)
        case reopen

        /// The rows after this change succeeds, or nil when the store must refuse it (an ID it already holds).
        func applied(to rows: Rows) -> Rows? {
            var next = rows
            switch self {
            case .save(let credential):
                if credential.isDiscoverable {
                    next = next.filter {
                        !($0.value.isDiscoverable && $0.value.relyingPartyID == credential.relyingPartyID
                            && $0.value.userHandle == credential.userHandle)
                    }
                }
                guard next[credential.id] == nil else { return nil }
                next[credential.id] = Row(credential)
            case .importing(let credentials):
                for credential in credentials where next[credential.id] == nil { next[credential.id] = Row(credential) }
                for (service, user) in StoreFaultTargets.logins(of: credentials) {
                    for kind: UInt8 in [1, 2] {
                        let key = StoreFaultTargets.loginKey(kind, service: service.text, user: user)
                        if next[key] == nil {
                            next[key] = StoreFaultTargets.loginRow(service: service.text, user: user)
                        }
                    }
                }
            case .delete(let id):
                next[id] = nil
            case .rename(let id, let name):
                next[id]?.userName = name
            case .hide(let id, let hidden):
                next[id]?.isHidden = hidden
            case .reopen:
                break
            }
            return next
        }
    }

    /// Reads changes from the input: credentials are small (one-byte IDs repeated to 16, so that they collide),
    /// with keys from seeded bytes.
    struct Changes {
        var input: FuzzInput
        let keys = SeededBytes(seed: 0x5F)

        mutating func next() -> Change? {
            guard let operation = input.byte() else { return nil }
            switch operation % 6 {
            case 0: return .save(credential())
            case 1: return .importing((0..<Int((input.byte() ?? 0) % 6)).map { _ in credential() })
            case 2: return .delete(id())
            case 3:
                let id = id()
                let name = input.byte().map { $0 & 1 == 0 ? nil : "renamed-\($0)" } ?? nil
                return .rename(id, name)
            case 4:
                let id = id()
                return .hide(id, (input.byte() ?? 0) & 1 == 1)
            default: return .reopen
            }
        }

        private mutating func id() -> [UInt8] { [UInt8](repeating: input.byte() ?? 0, count: 16) }

        private mutating func credential() -> StoredCredential {
            let id = id()
            let details = input.byte() ?? 0
            return StoredCredential(
                id: id, relyingPartyID: "rp\(details & 3).example", userHandle: [details >> 2 & 3],
                userName: "user-\(id[0])",
                privateKey: (try? P256.Signing.PrivateKey(rawRepresentation: keys.bytes(32)))
                    ?? P256.Signing.PrivateKey(),
                isDiscoverable: details & 0x10 != 0, backupEligible: false, backupState: false,
                creationDate: Date(timeIntervalSince1970: 1_700_000_000))
        }
    }

    /// An empty store's file and its key, made once: each run opens a copy with the key, since deriving it from
    /// the passphrase (scrypt) took most of a run's time.
    private static let template: (bytes: [UInt8], key: StoreKey) = {
        let url = directory.appendingPathComponent("template.sqlite")
        for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: url.path + suffix) }
        do {
            let store = try SQLiteCredentialStore.create(at: url, passphrase: passphrase, kdf: .testing)
            store.close()
            let key = try SQLiteCredentialStore.storeKey(at: url, passphrase: passphrase)
            let bytes = [UInt8](try Data(contentsOf: url))
            let files = PasskeyFiles(store: url)
            for file in [url, files.identityIndex, files.identityJournal, files.lock] {
                try? FileManager.default.removeItem(at: file)
            }
            return (bytes, key)
        } catch {
            fatalError("fuzz invariant broken: cannot make the empty store: \(error)")
        }
    }()

    /// A directory of this process's own, in memory where there is `/dev/shm` (the store syncs after every change).
    private static let directory: URL = {
        let base =
            FileManager.default.fileExists(atPath: "/dev/shm")
            ? URL(fileURLWithPath: "/dev/shm", isDirectory: true) : FileManager.default.temporaryDirectory
        let url = base.appendingPathComponent(
            "passkey-fuzz-store-faults-\(ProcessInfo.processInfo.processIdentifier)", isDirectory: true)
        try? FileManager.default.createDirectory(
            at: url, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        return url
    }()

    /// Numbers the runs, so that runs on several threads (the corpus replay tests) never share a folder.
    private static let runs = Atomic<Int>(0)

    static let storeFaults: FuzzTarget = FuzzTarget(
        name: "store-faults",
        summary: "store and import changes while SQLite's reads, writes and syncs fail: each whole or not at all, "
            + "and the same after reopening",
        seeds: {
            let calm = [UInt8](repeating: 1, count: 64)
            let failing = [UInt8](repeating: 0, count: 4) + [UInt8](repeating: 1, count: 60)
            let everyFourth = (0..<64).map { $0 % 4 == 3 ? UInt8(0) : UInt8(1) }
            let changes: [UInt8] = [0, 1, 0x10, 1, 3, 2, 3, 4, 5, 0x11, 6, 7, 3, 2, 8, 0x11, 4, 2, 1, 3, 0, 2, 2, 9]
            return [calm, failing, everyFourth, [0x08, 0x08, 0x08, 1]].map { FuzzInput.chunks([$0]) + changes }
        },
        run: { input in
            expect(installed, "the fault VFS could not be installed")
            var fuzz = FuzzInput(input)
            let plan = fuzz.chunk() ?? []
            var changes = Changes(input: fuzz)
            // A folder of the run's own holds the store and every file beside it (index, journal, lock).
            let folder = directory.appendingPathComponent(
                "run-\(runs.wrappingAdd(1, ordering: .relaxed).oldValue)", isDirectory: true)
            try? FileManager.default.createDirectory(at: folder, withIntermediateDirectories: false)
            defer { try? FileManager.default.removeItem(at: folder) }
            let url = folder.appendingPathComponent("passkeys.sqlite")
            // A copy of one empty store made once, opened with its key: no key derivation per run.
            guard FileManager.default.createFile(atPath: url.path, contents: Data(template.bytes)),
                let created = try? SQLiteCredentialStore.open(at: url, keyring: template.key)
            else { fatalError("fuzz invariant broken: cannot open a copy of the empty store at \(url.path)") }
            var store = created
            plan.withUnsafeBufferPointer { passkey_sqlite_faults_plan($0.baseAddress, $0.count) }
            defer { passkey_sqlite_faults_clear() }

            var rows: Rows = [:]
            // A change that failed at its sync has its commit in the WAL all the same: SQLite's connection never
            // reads it, but opening the store again recovers it (a failed fsync leaves the outcome unknown, as on
            // any disk) unless a later commit wrote over it. A failed change that wrote nothing leaves an earlier
            // one there, so every failed change since the last commit that changed the store may come back, but
            // only whole.
            var unsure: [Rows] = []
            while let change = changes.next() {
                let before = passkey_sqlite_faults_injected()
                let expected = change.applied(to: rows)
                let succeeded: Bool
                do {
                    switch change {
                    case .save(let credential): try store.save(credential)
                    case .importing(let credentials):
                        let logins = logins(of: credentials)
                        let date = Date(timeIntervalSince1970: 1_700_000_000)
                        _ = try store.importCredentials(
                            credentials,
                            passwords: logins.map {
                                PasswordImport(
                                    service: $0.service, userName: $0.user, password: "pw", note: "n",
                                    creationDate: date)
                            },
                            oneTimeCodes: logins.map {
                                OneTimeCodeImport(
                                    service: $0.service, userName: $0.user, issuer: nil, parameters: .init(),
                                    secret: [1, 2, 3], creationDate: date)
                            })
                    case .delete(let id): _ = try store.deleteCredential(id: id)
                    case .rename(let id, let name):
                        _ = try store.updateUser(credentialID: id, userName: name, userDisplayName: nil)
                    case .hide(let id, let hidden):
                        try store.setHidden(
                            hidden ? Date(timeIntervalSince1970: 1_800_000_000) : nil, credentialIDs: [id])
                    case .reopen:
                        store.close()
                        store = try reopen(url, unsure: &unsure, rows: &rows)
                    }
                    succeeded = true
                } catch {
                    succeeded = false
                    if case .reopen = change {
                        // The store could not be opened under faults: it must open without them.
                        passkey_sqlite_faults_pause(1)
                        defer { passkey_sqlite_faults_pause(0) }
                        do {
                            store = try reopen(url, unsure: &unsure, rows: &rows)
                        } catch {
                            fatalError("fuzz invariant broken: a store failed to open after faults: \(error)")
                        }
                    }
                }
                let faulted = passkey_sqlite_faults_injected() != before
                if case .reopen = change { continue }
                if succeeded {
                    expect(expected != nil, "the store accepted \(change) that it must refuse")
                    if let expected, expected != rows {
                        rows = expected
                        unsure = []
                    }
                } else {
                    expect(faulted || expected == nil, "\(change) failed with no fault injected")
                    if faulted, let expected, expected != rows { unsure.append(expected) }
                }
                expect(held(store) == rows, "after \(change) (succeeded: \(succeeded)) the store holds other rows")
            }
            store.close()
            passkey_sqlite_faults_clear()
            let last = try? reopen(url, unsure: &unsure, rows: &rows)
            expect(last != nil, "the store does not open after the run")
            last?.close()
        })

    /// Opens the store again and checks it holds `rows`, or one of `unsure` (which then becomes `rows`).
    private static func reopen(_ url: URL, unsure: inout [Rows], rows: inout Rows) throws(CredentialStoreError)
        -> SQLiteCredentialStore
    {
        let store = try SQLiteCredentialStore.open(at: url, keyring: template.key)
        let found = held(store)
        if unsure.contains(found) {
            rows = found
        } else {
            expect(found == rows, "after reopening, the store holds \(found) where the changes left \(rows)")
        }
        unsure = []
        return store
    }

    /// The store's rows, read with no faults.
    private static func held(_ store: SQLiteCredentialStore) -> Rows {
        passkey_sqlite_faults_pause(1)
        defer { passkey_sqlite_faults_pause(0) }
        do {
            var rows = Dictionary(
                try store.allCredentials().map { ($0.id, Row($0)) }, uniquingKeysWith: { first, _ in first })
            for password in try store.passwords() {
                let login = password.login
                rows[loginKey(1, service: login.service.text, user: login.userName)] = loginRow(
                    service: login.service.text, user: login.userName)
            }
            for code in try store.oneTimeCodes() {
                rows[loginKey(2, service: code.saved.service.text, user: code.saved.userName)] = loginRow(
                    service: code.saved.service.text, user: code.saved.userName)
            }
            return rows
        } catch {
            fatalError("fuzz invariant broken: the store cannot be read after a fault: \(error)")
        }
    }
}
