import CBOR
import CTAP2
import Crypto
import Foundation
import Synchronization

/// Faults at every seam, chosen by the fuzzer: as libfido2 fuzzes with failures injected into allocation, crypto
/// and CBOR calls, these targets run a stateful component in an environment whose store calls fail, whose random
/// bytes repeat, whose clock jumps and whose user answers anything, on calls the input picks, and check the
/// component's invariants after every step.
enum FaultTargets {
    /// CTAP2 requests to an authenticator over a store that fails on the script's say (before it changes anything,
    /// as the SQLite store's transactions do), with random bytes that may repeat the last ones (a credential ID
    /// collision), a clock that jumps, and a user who approves, denies, fails verification, times out or cancels.
    ///
    /// The input's first chunk is the fault script (one byte per consulted call: a fault when its low three bits are
    /// zero, so about 1 in 8; none once it is used up); then up to 16 requests, one per chunk, after a
    /// makeCredential for example.com. After each request: the answer is a known status byte (and canonical CBOR on
    /// success); a refused request left every credential as it was; an accepted makeCredential added exactly its
    /// credential, which reads back, and replaced at most the discoverable credential of the same account; nothing
    /// was written half (every credential reads back whole).
    static let ctap2Faults: FuzzTarget = FuzzTarget(
        name: "ctap2-faults",
        summary: "CTAP2 requests with store failures, repeated random bytes, clock jumps and any user answer injected "
            + "on fuzzer-chosen calls: no half-written or lost credential, every error a CTAP status",
        seeds: {
            let script: [UInt8] = [1, 1, 0, 1, 8, 1, 1, 16, 1, 0, 1, 1, 1, 24, 1, 1]
            return [
                [script, makeCredential(userID: [9, 9], name: "bob"), getAssertion()],
                [[1, 1, 1, 1], makeCredential(userID: [1, 2, 3, 4], name: "alice"), [CTAPCommand.getInfo.rawValue]],
                [[0, 0, 0, 0, 0, 0], makeCredential(userID: [7], name: "carol"), [CTAPCommand.reset.rawValue]],
                [[8, 1, 1, 1, 1, 1, 1, 1], getAssertion(), [CTAPCommand.getNextAssertion.rawValue]],
                [[1, 1, 1], [CTAPCommand.credentialManagement.rawValue] + CBORValue.map([1: 1]).encoded()],
            ].map(FuzzInput.chunks)
        },
        run: { input in
            var chunks = FuzzInput(input)
            let script = FaultScript(chunks.chunk() ?? [])
            let store = InMemoryCredentialStore(capacity: 16)
            let random = SeededBytes(seed: 3)
            let lastRandom = Mutex<[UInt8]>([])
            let clock = Mutex(CTAPTargets.startOfRun)
            let authenticator = Authenticator(
                environment: AuthenticatorEnvironment(
                    store: FaultyStore(store, script: script),
                    userInteraction: ScriptedUser(script: script),
                    randomBytes: { count in
                        lastRandom.withLock { last in
                            // A repeat: the bytes of the last call again, as far as they go.
                            if script.fails(), last.count >= count { return Array(last.prefix(count)) }
                            last = random.bytes(count)
                            return last
                        }
                    },
                    now: { clock.withLock { $0 } },
                    currentDate: { Date(timeIntervalSince1970: 1_800_000_000) }))
            var requests = [makeCredential(userID: [1, 2, 3, 4], name: "alice")]
            while requests.count < 16, let message = chunks.chunk() { requests.append(message) }
            for request in requests {
                let before = credentials(store)
                let response = runBlocking { await authenticator.handle(request) }
                let after = credentials(store)
                expect(!response.isEmpty, "an empty answer to \(request.prefix(1))")
                expect(response[0] == 0 || knownStatuses.contains(response[0]), "unknown status \(response[0])")
                expect(after.count <= store.capacity, "more credentials than the store holds")
                if response[0] == 0, response.count > 1 {
                    expect(
                        (try? CBORValue(decoding: response.dropFirst())) != nil,
                        "a success answer whose body is not canonical CBOR")
                }
                if response[0] != 0 {
                    expect(after == before, "a refused \(request.prefix(1)) changed the credentials")
                } else if request.first == CTAPCommand.makeCredential.rawValue {
                    checkNewCredential(response: response, before: before, after: after)
                }
                // A clock jump: up to 25.5 s, or an hour (timers, the reset window, PIN-token lifetimes).
                let step = script.byte()
                clock.withLock { $0 = $0.advanced(by: step == 0xFF ? .seconds(3600) : .milliseconds(100 * Int(step))) }
            }
        })

    /// Every status byte the authenticator may answer besides success.
    private static let knownStatuses: Set<UInt8> = Set(
        [
            CTAPError.invalidCommand, .invalidParameter, .invalidLength, .invalidSequence, .channelBusy,
            .cborUnexpectedType, .invalidCBOR, .missingParameter, .limitExceeded, .largeBlobStorageFull,
            .credentialExcluded, .unsupportedAlgorithm, .operationDenied, .keyStoreFull, .unsupportedOption,
            .invalidOption, .keepaliveCancel, .noCredentials, .userActionTimeout, .notAllowed, .pinInvalid,
            .pinBlocked, .pinAuthInvalid, .pinAuthBlocked, .pinNotSet, .pinUvAuthTokenRequired, .pinPolicyViolation,
            .requestTooLarge, .userPresenceRequired, .userVerificationBlocked, .integrityFailure, .invalidSubcommand,
            .userVerificationInvalid, .unauthorizedPermission, .other,
        ].map(\.rawValue))

    /// What a credential holds, to compare (the private key by its bytes).
    struct Held: Hashable {
        var id: [UInt8]
        var relyingPartyID: String
        var userHandle: [UInt8]
        var userName: String?
        var userDisplayName: String?
        var privateKey: [UInt8]
        var isDiscoverable: Bool
        var credentialProtection: String
        var credentialBlob: [UInt8]?
        var hmacSecret: Bool
        var largeBlobKey: Bool

        init(_ credential: StoredCredential) {
            id = credential.id
            relyingPartyID = credential.relyingPartyID
            userHandle = credential.userHandle
            userName = credential.userName
            userDisplayName = credential.userDisplayName
            privateKey = Array(credential.privateKey.rawRepresentation)
            isDiscoverable = credential.isDiscoverable
            credentialProtection = "\(credential.credentialProtection)"
            credentialBlob = credential.credentialBlob
            hmacSecret = credential.hmacSecret
            largeBlobKey = credential.largeBlobKey
        }
    }

    /// Every credential in the store, by ID, read past the faults.
    private static func credentials(_ store: InMemoryCredentialStore) -> [[UInt8]: Held] {
        guard let all = try? store.allCredentials() else { fatalError("fuzz invariant broken: the store cannot list") }
        return Dictionary(all.map { ($0.id, Held($0)) }, uniquingKeysWith: { first, _ in first })
    }

    /// An accepted makeCredential: its credential (from the attested credential data) is in the store and the only
    /// one added; what went is at most the discoverable credential of the same account (CTAP 2.1 §6.1.2 step 17).
    private static func checkNewCredential(
        response: [UInt8], before: [[UInt8]: Held], after: [[UInt8]: Held]
    ) {
        guard case .map(let map)? = try? CBORValue(decoding: response.dropFirst()),
            case .bytes(let authenticatorData)? = map[2], authenticatorData.count >= 55
        else { fatalError("fuzz invariant broken: an accepted makeCredential without authenticator data") }
        let length = Int(authenticatorData[53]) << 8 | Int(authenticatorData[54])
        let id = Array(authenticatorData.dropFirst(55).prefix(length))
        guard let new = after[id] else { fatalError("fuzz invariant broken: the new credential is not in the store") }
        expect(Set(after.keys).subtracting(before.keys) == [id], "a makeCredential added other credentials")
        for (gone, credential) in before where after[gone] == nil {
            expect(
                credential.isDiscoverable && new.isDiscoverable && credential.relyingPartyID == new.relyingPartyID
                    && credential.userHandle == new.userHandle,
                "a makeCredential removed another account's credential")
        }
        for (kept, credential) in before where kept != id {
            expect(after[kept].map { $0 == credential } ?? true, "a makeCredential changed another credential")
        }
    }

    private static func makeCredential(userID: [UInt8], name: String) -> [UInt8] {
        let parameters: [CBORValue: CBORValue] = [
            1: .bytes([UInt8](repeating: 0xCD, count: 32)),
            2: ["id": "example.com", "name": "Example"],
            3: ["id": .bytes(userID), "name": .text(name), "displayName": .text(name.capitalized)],
            4: [["alg": -7, "type": "public-key"]],
            6: ["credProtect": 2, "hmac-secret": true, "largeBlobKey": true],
            7: ["rk": true],
        ]
        return [CTAPCommand.makeCredential.rawValue] + CBORValue.map(parameters).encoded()
    }

    private static func getAssertion() -> [UInt8] {
        let parameters: CBORValue = [1: "example.com", 2: .bytes([UInt8](repeating: 0xAB, count: 32)), 5: ["up": true]]
        return [CTAPCommand.getAssertion.rawValue] + parameters.encoded()
    }
}

/// The fuzzer's choice of faults: one byte per consulted call.
final class FaultScript: Sendable {
    private let bytes: Mutex<[UInt8]>

    init(_ bytes: [UInt8]) { self.bytes = Mutex(Array(bytes.reversed())) }

    /// The next byte of the script; 1 (no fault) once it is used up.
    func byte() -> UInt8 { bytes.withLock { $0.popLast() } ?? 1 }

    /// Whether the call consulting it fails: about 1 in 8 while the script lasts.
    func fails() -> Bool { byte() & 0x07 == 0 }
}

/// A store whose every call may fail before it changes anything: the SQLite store's calls are transactions, so a
/// failed write leaves nothing behind, and the authenticator must not answer success for it.
final class FaultyStore: CredentialStore {
    private let inner: InMemoryCredentialStore
    private let script: FaultScript

    init(_ inner: InMemoryCredentialStore, script: FaultScript) {
        self.inner = inner
        self.script = script
    }

    private func fault() throws(CredentialStoreError) {
        if script.fails() { throw CredentialStoreError(.io, "injected: the disk refused") }
    }

    func credentials(forRelyingParty relyingPartyID: String) throws(CredentialStoreError) -> [StoredCredential] {
        try fault()
        return try inner.credentials(forRelyingParty: relyingPartyID)
    }

    func allCredentials() throws(CredentialStoreError) -> [StoredCredential] {
        try fault()
        return try inner.allCredentials()
    }

    func credential(id: [UInt8]) throws(CredentialStoreError) -> StoredCredential? {
        try fault()
        return try inner.credential(id: id)
    }

    func save(_ credential: StoredCredential) throws(CredentialStoreError) {
        try fault()
        try inner.save(credential)
    }

    func deleteCredential(id: [UInt8]) throws(CredentialStoreError) -> Bool {
        try fault()
        return try inner.deleteCredential(id: id)
    }

    func updateUser(credentialID: [UInt8], userName: String?, userDisplayName: String?)
        throws(CredentialStoreError) -> Bool
    {
        try fault()
        return try inner.updateUser(credentialID: credentialID, userName: userName, userDisplayName: userDisplayName)
    }

    func deleteAll() throws(CredentialStoreError) {
        try fault()
        try inner.deleteAll()
    }

    func settings() throws(CredentialStoreError) -> AuthenticatorSettings {
        try fault()
        return try inner.settings()
    }

    func saveSettings(_ settings: AuthenticatorSettings) throws(CredentialStoreError) {
        try fault()
        try inner.saveSettings(settings)
    }

    func largeBlobArray() throws(CredentialStoreError) -> [UInt8]? {
        try fault()
        return try inner.largeBlobArray()
    }

    func saveLargeBlobArray(_ array: [UInt8]) throws(CredentialStoreError) {
        try fault()
        try inner.saveLargeBlobArray(array)
    }
}

/// A user who answers what the script says: mostly yes (with the verification asked for), else no, a wrong
/// passphrase, no answer in time, or a cancelled prompt; and, when a chooser is shown, picks any account.
struct ScriptedUser: UserInteraction {
    let script: FaultScript

    func requestConsent(_ request: ConsentRequest) async -> ConsentResult {
        let byte = script.byte()
        switch byte & 0x07 {
        case 0: return .denied
        case 1, 2, 3, 4: return .approved(userVerified: request.requiresVerification, selectedAccount: Int(byte >> 3))
        case 5: return .verificationFailed
        case 6: return .timedOut
        default: return .cancelled
        }
    }
}
