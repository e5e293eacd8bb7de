import Foundation
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
    public let stateURL: URL
    public let interface: any ProviderUserInterface
    /// Challenges and user handles.
    public let random: @Sendable (Int) -> [UInt8]

    public init(
        relyingPartyID: String, origin: String? = nil, stateURL: URL, interface: any ProviderUserInterface,
        random: @escaping @Sendable (Int) -> [UInt8]
    ) {
        self.relyingPartyID = relyingPartyID
        self.origin = origin ?? "https://\(relyingPartyID)"
        self.stateURL = stateURL
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
        let state = try RelyingPartyState.load(from: stateURL)
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
        let state = try RelyingPartyState.load(from: stateURL)
        guard state.accounts(for: relyingPartyID).contains(where: { user == nil || $0.userName == user }) else {
            throw ProviderError(
                "no passkey for \(relyingPartyID)\(user.map { " and \($0)" } ?? "") in \(stateURL.path)",
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
            if let newState = outcome.newState { try newState.save(to: stateURL) }
            interface.report(.computer(.verifiedByRelyingParty))
            return accepted
        case .refused(_, let error, _):
            throw ProviderError("the relying party refused the answer: \(error)")
        case .clientError(let result):
            throw ProviderError("the relying party refused the answer: \(result.message)")
        }
    }
}
