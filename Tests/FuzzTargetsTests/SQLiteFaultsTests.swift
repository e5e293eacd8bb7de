import CSQLiteFaults
import CTAP2
import Crypto
import Foundation
import PasskeyStoreIO
import TestSupport
import Testing

/// The fault VFS under the store-faults target: a plan makes the store's disk calls fail, on the planning thread only,
/// and the store keeps working once the plan ends. Each test is synchronous, so it stays on one thread, as the plan
/// does.
struct SQLiteFaultsTests {
    static func credential(_ byte: UInt8) -> StoredCredential {
        StoredCredential(
            id: [UInt8](repeating: byte, count: 16), relyingPartyID: "example.com", userHandle: [byte],
            userName: "user", privateKey: P256.Signing.PrivateKey(), isDiscoverable: true, backupEligible: false,
            backupState: false, creationDate: Date(timeIntervalSince1970: 1_700_000_000))
    }

    @Test func aPlanFailsTheStoresWritesAndTheStoreWorksAgainAfterIt() throws {
        #expect(passkey_sqlite_faults_install() == 0)
        let directory = try TemporaryDirectory(prefix: "passkey-sqlite-faults")
        defer { directory.remove() }
        let store = try SQLiteCredentialStore.create(
            at: directory.url("passkeys.sqlite"), passphrase: "fuzz", kdf: .testing)
        defer { store.close() }

        let before = passkey_sqlite_faults_injected()
        let everyCall = [UInt8](repeating: 0, count: 256)
        everyCall.withUnsafeBufferPointer { passkey_sqlite_faults_plan($0.baseAddress, $0.count) }
        #expect(throws: CredentialStoreError.self) { try store.save(Self.credential(1)) }
        passkey_sqlite_faults_clear()
        #expect(passkey_sqlite_faults_injected() > before)

        try store.save(Self.credential(1))
        #expect(try store.allCredentials().map(\.id) == [Self.credential(1).id])
    }

    @Test func aPausedPlanFailsNothingAndAnotherThreadsCallsNeverFail() throws {
        #expect(passkey_sqlite_faults_install() == 0)
        let directory = try TemporaryDirectory(prefix: "passkey-sqlite-faults")
        defer { directory.remove() }
        let store = try SQLiteCredentialStore.create(
            at: directory.url("passkeys.sqlite"), passphrase: "fuzz", kdf: .testing)
        defer { store.close() }

        let everyCall = [UInt8](repeating: 0, count: 256)
        everyCall.withUnsafeBufferPointer { passkey_sqlite_faults_plan($0.baseAddress, $0.count) }
        defer { passkey_sqlite_faults_clear() }
        passkey_sqlite_faults_pause(1)
        try store.save(Self.credential(2))
        passkey_sqlite_faults_pause(0)

        let done = DispatchSemaphore(value: 0)
        Thread {
            do {
                try store.save(Self.credential(3))
            } catch {
                Issue.record("another thread's save failed under this thread's plan: \(error)")
            }
            done.signal()
        }.start()
        done.wait()
        #expect(try Set(store.allCredentials().map(\.id)) == [Self.credential(2).id, Self.credential(3).id])
    }
}
