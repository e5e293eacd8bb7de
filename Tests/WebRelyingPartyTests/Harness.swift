import Foundation
import RelyingParty
import RelyingPartyTestSupport
import WebRelyingParty

/// A web relying party for `localhost` with a manual clock and counting random bytes, and the state it keeps.
struct Harness {
    static let origin = "http://localhost:8787"
    static let rpID = "localhost"
    static let date = Date(timeIntervalSince1970: 1_800_000_000)

    var relyingParty: WebRelyingParty
    var state = RelyingPartyState()
    /// The manual clock.
    var now = ContinuousClock.now
    private var counter: UInt8 = 0

    init(configure: (inout WebRelyingParty.Configuration) -> Void = { _ in }) {
        var configuration = WebRelyingParty.Configuration(
            relyingParty: RelyingPartyEntity(id: Self.rpID, name: "Test RP"), origins: [Self.origin])
        configure(&configuration)
        relyingParty = WebRelyingParty(configuration: configuration)
    }

    /// Distinct, predictable "random" bytes.
    mutating func random(_ count: Int) -> [UInt8] {
        counter &+= 1
        return [UInt8](repeating: counter, count: count)
    }

    mutating func registrationOptions(_ request: RegistrationOptionsRequest) -> [UInt8] {
        let challenge = random(32)
        let handle = random(16)
        return relyingParty.registrationOptions(
            for: request, state: state, challenge: challenge, newUserHandle: handle, now: now)
    }

    mutating func authenticationOptions(_ request: AuthenticationOptionsRequest = .init()) throws(WebRelyingPartyError)
        -> [UInt8]
    {
        let challenge = random(32)
        return try relyingParty.authenticationOptions(for: request, state: state, challenge: challenge, now: now)
    }

    /// Verifies and, like the server, keeps the new state.
    mutating func verifyRegistration(_ body: [UInt8]) -> VerificationOutcome {
        let outcome = relyingParty.verifyRegistration(body, state: state, now: now, date: Self.date)
        if let newState = outcome.newState { state = newState }
        return outcome
    }

    mutating func verifyAuthentication(_ body: [UInt8]) -> VerificationOutcome {
        let outcome = relyingParty.verifyAuthentication(body, state: state, now: now)
        if let newState = outcome.newState { state = newState }
        return outcome
    }

    /// Registers `user` with `authenticator`; returns the outcome.
    @discardableResult
    mutating func register(
        _ user: String, with authenticator: inout SoftwareAuthenticator,
        spoil: SoftwareAuthenticator.Spoil = .init()
    ) throws -> VerificationOutcome {
        let options = registrationOptions(RegistrationOptionsRequest(userName: user))
        return verifyRegistration(try authenticator.register(optionsJSON: options, spoil: spoil))
    }
}

extension VerificationOutcome {
    /// The refusal's code, or nil when the verdict is not a refusal.
    var refusalCode: WebRelyingPartyError.Code? {
        if case .refused(_, let error, _) = verdict { return error.code }
        return nil
    }
}

func object(_ json: [UInt8]) throws -> [String: Any] {
    try SoftwareAuthenticator.object(json)
}
