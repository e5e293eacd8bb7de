import Foundation
import Synchronization
import RelyingParty
import WebRelyingPartyIO
import WebAuthn
import WebAuthnClient
import WebRelyingParty

/// `passkey client register` and `client sign-in`: this package's own web relying party for one RP ID (the one
/// behind `passkey rp serve`), whose options go to the WebAuthn engine as a server's would, and whose verified
/// answers are kept in its state file (`PasskeyFiles.relyingPartyState`, or `--rp-state`).
///
/// The state is saved only after the relying party accepted the answer, so that a refused or failed ceremony leaves
/// the file as it was. Errors of the state file itself (`RelyingPartyStateError`) and the engine's `ClientError`
/// pass through unchanged: the command renders each its own way.
public struct LocalRelyingParty: Sendable {
    public let relyingPartyID: String
    /// The origin of the page asking: `https://RPID` unless the command names one.
    public let origin: String
    public let state: RelyingPartyStateStorage
    /// Told when the relying party verified an answer; nil reports nothing.
    public let interface: (any ProviderUserInterface)?
    /// Challenges and user handles.
    public let random: @Sendable (Int) -> [UInt8]

    public init(
        relyingPartyID: String, origin: String? = nil, state: RelyingPartyStateStorage,
        interface: (any ProviderUserInterface)? = nil, random: @escaping @Sendable (Int) -> [UInt8]
    ) {
        self.relyingPartyID = relyingPartyID
        self.origin = origin ?? "https://\(relyingPartyID)"
        self.state = state
        self.interface = interface
        self.random = random
    }

    var relyingParty: WebRelyingParty {
        WebRelyingParty(
            configuration: .init(
                relyingParty: RelyingPartyEntity(id: relyingPartyID, name: relyingPartyID), origins: [origin]))
    }

    /// Registers a discoverable passkey for `user` through the engine `makeEngine` gives (resident key and user
    /// verification required, the account's passkeys excluded), and keeps its public key. The engine is made only
    /// once the state file was read, so that a bad state file is reported before any phone is reached.
    public func register(
        user: String, displayName: String?, makeEngine: () throws -> ClientEngine
    ) async throws -> AcceptedResponse {
        let state = try self.state.load()
        var relyingParty = relyingParty
        let request = relyingParty.registrationOptions(
            for: RegistrationOptionsRequest(
                userName: user, displayName: displayName, residentKey: .required, userVerification: .required),
            state: state, challenge: random(32), newUserHandle: random(16), now: .now)
        let credential = try await makeEngine().create(
            PublicKeyCredentialCreationOptions(json: request), origin: origin)
        return try conclude(relyingParty.verifyRegistration(credential.json(), state: state, now: .now, date: Date()))
    }

    /// Signs in through the engine `makeEngine` gives as `user` (its credentials in allowCredentials), or as whichever account the
    /// authenticator picks. Fails before any authenticator is reached when the state has no such passkey.
    public func signIn(user: String?, makeEngine: () throws -> ClientEngine) async throws -> AcceptedResponse {
        let state = try self.state.load()
        guard state.accounts(for: relyingPartyID).contains(where: { user == nil || $0.userName == user }) else {
            throw ProviderError(
                "no passkey for \(relyingPartyID)\(user.map { " and \($0)" } ?? "") in \(self.state.name)",
                hint: "Register one first with `passkey client register`.")
        }
        var relyingParty = relyingParty
        let request: [UInt8]
        do {
            request = try relyingParty.authenticationOptions(
                for: AuthenticationOptionsRequest(userName: user, userVerification: .required), state: state,
                challenge: random(32), now: .now)
        } catch {
            throw ProviderError("\(error)")
        }
        let credential = try await makeEngine().get(PublicKeyCredentialRequestOptions(json: request), origin: origin)
        return try conclude(relyingParty.verifyAuthentication(credential.json(), state: state, now: .now))
    }

    /// The relying party's verdict: an accepted answer saves the state it returns; a refusal is a failure.
    func conclude(_ outcome: VerificationOutcome) throws -> AcceptedResponse {
        switch outcome.verdict {
        case .registered(let accepted), .authenticated(let accepted):
            if let newState = outcome.newState { try state.save(newState) }
            interface?.report(.computer(.verifiedByRelyingParty))
            return accepted
        case .refused(_, let error, _):
            throw ProviderError("the relying party refused the answer: \(error)")
        case .clientError(let result):
            throw ProviderError("the relying party refused the answer: \(result.message)")
        case .deleted, .passwordSignedUp, .passwordSignedIn, .passwordRefused, .renamed:
            throw ProviderError("the relying party answered a ceremony with something other than a verdict on it")
        }
    }
}

/// Where a local relying party keeps its accounts between ceremonies: its state file, or memory.
public struct RelyingPartyStateStorage: Sendable {
    /// How messages name it: the file's path, or "memory".
    public let name: String
    public let load: @Sendable () throws -> RelyingPartyState
    public let save: @Sendable (RelyingPartyState) throws -> Void

    /// The state file at `url` (`RelyingPartyState.load`/`save`: absent is empty, written owner-only).
    public static func file(_ url: URL) -> Self {
        Self(
            name: url.path, load: { try RelyingPartyState.load(from: url) }, save: { try $0.save(to: url) })
    }

    /// Accounts kept in memory for as long as this value lives (the benchmarks, where a file write per ceremony
    /// would be what is measured).
    public static func memory(_ initial: RelyingPartyState = RelyingPartyState()) -> Self {
        let kept = Kept(initial)
        return Self(
            name: "memory", load: { kept.value.withLock { $0 } }, save: { state in kept.value.withLock { $0 = state } })
    }

    private final class Kept: Sendable {
        let value: Mutex<RelyingPartyState>
        init(_ state: RelyingPartyState) { value = Mutex(state) }
    }
}
