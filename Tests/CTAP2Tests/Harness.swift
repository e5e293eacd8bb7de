import CBOR
import CTAP2
import Foundation
import Synchronization
import TestSupport
import WebAuthn

/// A user double: answers with scripted results and records every request.
final class ScriptedUser: UserInteraction {
    private let state: Mutex<(answers: [ConsentResult], requests: [ConsentRequest])>

    init(_ answers: [ConsentResult] = []) {
        state = Mutex((answers, []))
    }

    func requestConsent(_ request: ConsentRequest) async -> ConsentResult {
        state.withLock { state in
            state.requests.append(request)
            guard !state.answers.isEmpty else {
                return .approved(userVerified: request.requiresVerification, selectedAccount: nil)
            }
            return state.answers.removeFirst()
        }
    }

    var requests: [ConsentRequest] { state.withLock { $0.requests } }
}

struct Harness {
    let authenticator: Authenticator
    let store: InMemoryCredentialStore
    let user: ScriptedUser
    let clock: ManualClock

    init(
        answers: [ConsentResult] = [],
        configuration: AuthenticatorConfiguration = AuthenticatorConfiguration(),
        store: InMemoryCredentialStore = InMemoryCredentialStore(),
        seed: UInt64 = 1
    ) {
        let user = ScriptedUser(answers)
        let clock = ManualClock()
        let random = SeededBytes(seed: seed)
        self.user = user
        self.clock = clock
        self.store = store
        authenticator = Authenticator(
            configuration: configuration,
            environment: AuthenticatorEnvironment(
                store: store,
                userInteraction: user,
                randomBytes: { random.bytes($0) },
                now: { clock.now },
                currentDate: { Date(timeIntervalSince1970: 1_800_000_000) }
            )
        )
    }

    /// Sends a command with CBOR parameters; returns the status and the decoded response.
    func send(_ command: CTAPCommand, _ parameters: CBORValue? = nil) async throws -> (status: UInt8, body: CBORValue?)
    {
        let response = await authenticator.handle([command.rawValue] + (parameters?.encoded() ?? []))
        let body = response.count > 1 ? try CBORValue(decoding: response.dropFirst()) : nil
        return (response[0], body)
    }

    func sendRaw(_ bytes: [UInt8]) async -> [UInt8] {
        await authenticator.handle(bytes)
    }
}

enum Fixtures {
    static let clientDataHash = [UInt8](repeating: 0xCD, count: 32)
    static let es256: CBORValue = [["alg": -7, "type": "public-key"]]

    static func makeCredential(
        rp: String = "example.com",
        userID: [UInt8] = [1, 2, 3, 4],
        name: String = "alice",
        options: CBORValue? = ["rk": true, "uv": true],
        algorithms: CBORValue = es256,
        excludeList: [[UInt8]] = [],
        extra: [CBORValue: CBORValue] = [:]
    ) -> CBORValue {
        var map: [CBORValue: CBORValue] = [
            1: .bytes(clientDataHash),
            2: ["id": .text(rp), "name": "Example"],
            3: ["id": .bytes(userID), "name": .text(name), "displayName": .text(name.capitalized)],
            4: algorithms,
        ]
        if !excludeList.isEmpty { map[5] = .array(excludeList.map { ["type": "public-key", "id": .bytes($0)] }) }
        if let options { map[7] = options }
        map.merge(extra) { _, new in new }
        return .map(map)
    }

    static func getAssertion(
        rp: String = "example.com",
        allowList: [[UInt8]] = [],
        options: CBORValue? = nil,
        extra: [CBORValue: CBORValue] = [:]
    ) -> CBORValue {
        var map: [CBORValue: CBORValue] = [1: .text(rp), 2: .bytes(clientDataHash)]
        if !allowList.isEmpty { map[3] = .array(allowList.map { ["type": "public-key", "id": .bytes($0)] }) }
        if let options { map[5] = options }
        map.merge(extra) { _, new in new }
        return .map(map)
    }
}

extension CBORValue {
    subscript(key: CBORValue) -> CBORValue? { mapValue?[key] }
}
