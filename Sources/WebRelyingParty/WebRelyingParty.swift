import Basics
import Foundation
import RelyingParty
import WebAuthn

/// A relying party for a web page: issues WebAuthn Level 3 options JSON, keeps the pending ceremonies, and
/// verifies the `toJSON()` responses with ``RelyingPartyVerifier`` against a ``RelyingPartyState``.
///
/// Pure: challenges, user handles, the time and the date are parameters, and the state is the caller's. A
/// verification returns a ``Verdict`` and, when it changed anything, the new state for the caller to save; a
/// refusal never returns a state, so nothing changes. The options ask for EdDSA, ES256 and RS256, in that order.
public struct WebRelyingParty: Sendable {
    /// The credential algorithms the registration options ask for, most preferred first: EdDSA (Ed25519), ES256,
    /// RS256, the three that cover every authenticator in use (WebAuthn §5.4.3's advice); all three verify.
    public static let algorithms: [COSEAlgorithm] = [.eddsa, .es256, .rs256]

    /// The relying party, its origins and its ceremony limits.
    public struct Configuration: Hashable, Sendable {
        /// The RP ID (and name) the options carry and the authenticator data must hash.
        public var relyingParty: RelyingPartyEntity
        /// The origins clientDataJSON may name, `scheme://host[:port]`, compared exactly.
        public var origins: Set<String>
        /// Challenge lifetime and how many ceremonies are kept.
        public var ceremonies = CeremonyLimits()

        public init(relyingParty: RelyingPartyEntity, origins: Set<String>) {
            self.relyingParty = relyingParty
            self.origins = origins
        }
    }

    enum Ceremony: Sendable {
        /// `upgrade`: options for `create()` with `mediation: "conditional"` after a password sign-in, whose
        /// response may come without the UP flag.
        case registration(RegistrationOptions, userName: String, upgrade: Bool)
        case authentication(AuthenticationOptions, userName: String?)
    }

    public let configuration: Configuration
    private let verifier: RelyingPartyVerifier
    private var book: CeremonyBook<Ceremony>

    public init(configuration: Configuration) {
        self.configuration = configuration
        verifier = RelyingPartyVerifier(relyingParty: configuration.relyingParty, origins: configuration.origins)
        book = CeremonyBook(limits: configuration.ceremonies)
    }

    private var rpID: String { configuration.relyingParty.id }

    /// The options' `timeout`: the challenge lifetime, so a browser gives up no later than the challenge expires.
    private var timeoutMilliseconds: Int {
        Int(configuration.ceremonies.lifetime.inMilliseconds)
    }

    /// Ceremonies waiting for their response.
    public var pendingCount: Int { book.pendingCount }

    /// Starts a registration and returns its `PublicKeyCredentialCreationOptionsJSON`.
    ///
    /// The account's registered credentials go in `excludeCredentials`, so an authenticator that holds one of
    /// them refuses (InvalidStateError in a browser). A known account keeps its user handle (and, without a
    /// `displayName` in the request, its display name); a new one gets `newUserHandle` (pass 16 to 64 fresh random
    /// bytes), as does `challenge` (32 fresh random bytes).
    ///
    /// With `upgrade`, the options are for an automatic passkey upgrade (`create()` with `mediation:
    /// "conditional"` right after a password sign-in), and the response is verified without requiring the UP flag.
    public mutating func registrationOptions(
        for request: RegistrationOptionsRequest, state: RelyingPartyState, challenge: [UInt8],
        newUserHandle: [UInt8], now: ContinuousClock.Instant, upgrade: Bool = false
    ) -> [UInt8] {
        let accounts = state.accounts(for: rpID).filter { $0.userName == request.userName }
        let user = state.user(rpID: rpID, userName: request.userName)
        let userHandle = accounts.lazy.compactMap(\.credential.userHandle).first ?? user?.userHandle ?? newUserHandle
        let options = RegistrationOptions(
            challenge: challenge,
            user: UserEntity(
                id: userHandle, name: request.userName, displayName: request.displayName ?? user?.displayName),
            algorithms: Self.algorithms,
            userVerification: request.userVerification,
            residentKey: request.residentKey,
            attestation: request.attestation,
            excludeCredentials: accounts.map(\.credential.id),
            timeout: timeoutMilliseconds,
            hints: request.hints)
        book.issue(.registration(options, userName: request.userName, upgrade: upgrade), challenge: challenge, now: now)
        return options.json(relyingParty: configuration.relyingParty)
    }

    /// Starts an authentication and returns its `PublicKeyCredentialRequestOptionsJSON`: with a user name, that
    /// account's credentials in `allowCredentials` (``WebRelyingPartyError/Code/unknownUser`` when it has
    /// none); without one, an empty list. `challenge` must be 32 fresh random bytes.
    public mutating func authenticationOptions(
        for request: AuthenticationOptionsRequest, state: RelyingPartyState, challenge: [UInt8],
        now: ContinuousClock.Instant
    ) throws(WebRelyingPartyError) -> [UInt8] {
        var allowCredentials: [[UInt8]] = []
        var expectedUserHandle: [UInt8]? = nil
        if let userName = request.userName {
            let accounts = state.accounts(for: rpID).filter { $0.userName == userName }
            guard !accounts.isEmpty else {
                throw WebRelyingPartyError(.unknownUser, "no passkey is registered for \(userName) at \(rpID)")
            }
            allowCredentials = accounts.map(\.credential.id)
            let handles = Set(accounts.compactMap(\.credential.userHandle))
            if handles.count == 1 { expectedUserHandle = handles.first }
        }
        let options = AuthenticationOptions(
            challenge: challenge, allowCredentials: allowCredentials, userVerification: request.userVerification,
            expectedUserHandle: expectedUserHandle, timeout: timeoutMilliseconds, hints: request.hints)
        book.issue(.authentication(options, userName: request.userName), challenge: challenge, now: now)
        return options.json(relyingPartyID: rpID)
    }

    /// Verifies a `RegistrationResponseJSON` body (WebAuthn §7.1, with step 26 against `state`).
    ///
    /// The ceremony is found by the challenge in clientDataJSON and ended, whatever the outcome. On success the
    /// outcome holds `state` with the new account added, registered at `date` to the whole second (as the state
    /// file keeps it, so the state in memory is the state on disk).
    public mutating func verifyRegistration(
        _ body: [UInt8], state: RelyingPartyState, now: ContinuousClock.Instant, date: Date
    ) -> VerificationOutcome {
        var userName: String? = nil
        do throws(WebRelyingPartyError) {
            let (ceremony, parsed) = try begin(body, now: now, parse: RegistrationResponseJSON.init(object:))
            guard case .registration(let options, let name, let upgrade) = ceremony else {
                if case .authentication(_, let name) = ceremony { userName = name }
                throw WebRelyingPartyError(
                    .ceremonyMismatch, "the challenge was issued for an authentication, not a registration")
            }
            userName = name
            let response = try parsed.get()
            let result: RegistrationResult
            do throws(RelyingPartyError) {
                result = try verifier.verifyRegistration(
                    response.response, options: options, conditionalMediation: upgrade)
            } catch {
                throw WebRelyingPartyError(error)
            }
            let credential = result.credential
            guard !state.accounts.contains(where: { $0.credential.id == credential.id }) else {
                throw WebRelyingPartyError(
                    .credentialAlreadyRegistered,
                    "credential \(credential.id.base64URLEncodedString) is already registered (WebAuthn §7.1 step 26)")
            }
            var newState = state
            let registered = Date(timeIntervalSince1970: date.timeIntervalSince1970.rounded(.down))
            newState.add(
                RelyingPartyState.Account(rpID: rpID, userName: name, registered: registered, credential: credential))
            // A display name other than the user name is kept, so that sign-ins can tell the passkey provider the
            // account's current names (signalCurrentUserDetails) without renaming the passkey.
            if newState.user(rpID: rpID, userName: name) == nil, options.user.displayName != name {
                newState.set(
                    RelyingPartyState.User(
                        rpID: rpID, userName: name, displayName: options.user.displayName,
                        userHandle: options.user.id, password: nil))
            }
            let verdict = AcceptedResponse(
                userName: name, credential: credential,
                userVerified: result.authenticatorData.flags.contains(.userVerified),
                authenticatorAttachment: response.authenticatorAttachment, upgrade: upgrade,
                userPresent: result.authenticatorData.flags.contains(.userPresent))
            return VerificationOutcome(verdict: .registered(verdict), newState: newState)
        } catch {
            return VerificationOutcome(verdict: .refused(.registration, error, userName: userName), newState: nil)
        }
    }

    /// Verifies an `AuthenticationResponseJSON` body (WebAuthn §7.2) against the records in `state`.
    ///
    /// The ceremony is found by the challenge in clientDataJSON and ended, whatever the outcome. On success the
    /// outcome holds the new state when the record changed (signature counter, backup state, UV).
    public mutating func verifyAuthentication(
        _ body: [UInt8], state: RelyingPartyState, now: ContinuousClock.Instant
    ) -> VerificationOutcome {
        var userName: String? = nil
        do throws(WebRelyingPartyError) {
            let (ceremony, parsed) = try begin(body, now: now, parse: AuthenticationResponseJSON.init(object:))
            guard case .authentication(let options, let name) = ceremony else {
                if case .registration(_, let name, _) = ceremony { userName = name }
                throw WebRelyingPartyError(
                    .ceremonyMismatch, "the challenge was issued for a registration, not an authentication")
            }
            userName = name
            let response = try parsed.get()
            let accounts = state.accounts(for: rpID)
            let result: AuthenticationResult
            do throws(RelyingPartyError) {
                result = try verifier.verifyAuthentication(
                    response.response, options: options, credentials: accounts.map(\.credential))
            } catch {
                throw WebRelyingPartyError(error)
            }
            // The verifier found the record, so the account exists.
            let account = accounts.first { $0.credential.id == result.credential.id }
            var newState: RelyingPartyState? = nil
            if account?.credential != result.credential {
                var updated = state
                updated.update(result.credential)
                newState = updated
            }
            let verdict = AcceptedResponse(
                userName: account?.userName ?? name ?? "", credential: result.credential,
                userVerified: result.userVerified, authenticatorAttachment: response.authenticatorAttachment)
            return VerificationOutcome(verdict: .authenticated(verdict), newState: newState)
        } catch {
            return VerificationOutcome(verdict: .refused(.authentication, error, userName: userName), newState: nil)
        }
    }

    /// Reads the body, finds and ends the ceremony its clientDataJSON names, and parses the rest, whose failure
    /// is returned rather than thrown: by then the challenge is spent.
    private mutating func begin<Response>(
        _ body: [UInt8], now: ContinuousClock.Instant, parse: (JSONObject) throws(JSONBodyError) -> Response
    ) throws(WebRelyingPartyError) -> (Ceremony, Result<Response, WebRelyingPartyError>) {
        let object: JSONObject
        do throws(JSONBodyError) {
            object = try JSONObject(body)
        } catch {
            throw WebRelyingPartyError(.badJSON, error.description)
        }
        let parsed: Result<Response, WebRelyingPartyError>
        do throws(JSONBodyError) {
            parsed = .success(try parse(object))
        } catch {
            parsed = .failure(WebRelyingPartyError(.malformedResponse, error.description))
        }
        guard let clientData = object.clientData() else {
            if case .failure(let error) = parsed { throw error }
            throw WebRelyingPartyError(.malformedResponse, "response.clientDataJSON is not a client data JSON object")
        }
        switch book.take(clientData.challenge, now: now) {
        case .success(let ceremony):
            return (ceremony, parsed)
        case .failure(.unknown):
            throw WebRelyingPartyError(.unknownChallenge, "the challenge in clientDataJSON was not issued here")
        case .failure(.expired):
            throw WebRelyingPartyError(.challengeExpired, "the challenge expired before the response arrived")
        case .failure(.evicted):
            throw WebRelyingPartyError(
                .challengeEvicted, "the challenge was dropped: too many ceremonies were started after it")
        case .failure(.replayed):
            throw WebRelyingPartyError(.challengeReplayed, "the challenge was already used by an earlier response")
        }
    }
}

/// What a verification decided, and the state to save when it changed anything.
public struct VerificationOutcome: Sendable {
    public var verdict: Verdict
    /// The state with the change applied; nil when nothing is to be saved (always nil after a refusal).
    public var newState: RelyingPartyState?
}

extension WebRelyingParty.Configuration {
    /// The origins a relying party for `relyingPartyID` accepts when its page is served on `port`: the `explicit`
    /// ones, or else `http://RPID:PORT` (a secure context for `localhost` and `*.localhost`). Each is checked as a
    /// browser checks it (``OriginCheck``): a secure context whose host is the RP ID or ends with it; each is
    /// returned normalised (`scheme://host[:port]`, lowercase, no default port).
    public static func origins(
        relyingPartyID: String, explicit: [String], port: Int
    ) throws(OriginCheckError) -> Set<String> {
        let candidates = explicit.isEmpty ? ["http://\(relyingPartyID):\(port)"] : explicit
        var origins: Set<String> = []
        for origin in candidates {
            origins.insert(try OriginCheck.validate(relyingPartyID: relyingPartyID, origin: origin))
        }
        return origins
    }
}
