import CBOR
import CTAP2
import CTAPHID
import Hybrid
import Synchronization
import WebAuthnClient
import WebAuthnClientDriver

/// The security key with a phone behind it (`passkey serve --phone`, issue 25): each CTAP request goes where
/// `PhoneRoute` says — the store's authenticator, a phone, or the person's choice for a creation — and a phone's
/// request is forwarded byte for byte (`PhoneRequestForwarder`).
///
/// While a phone is on its way the transport is kept informed (`BridgeKeepalive`: user presence needed while the QR
/// code is up or the linked phone is woken, processing once it is near), and a cancelled request (CTAPHID_CANCEL,
/// the browser's timeout) ends the phone's session at once and answers KEEPALIVE_CANCEL. A linked phone is tried
/// first; when it cannot be reached (its link gone, not near in time) the same request shows a QR code.
public final class SecurityKeyBridge: Sendable {
    /// How the bridge reaches a phone for one request. Each gets the progress callback of that request.
    public struct Phones: Sendable {
        /// A phone by QR code (`HybridPhoneAuthenticator`).
        public var qrCode:
            @Sendable (_ progress: @escaping @Sendable (HybridClientProgress) -> Void) -> any ClientAuthenticator
        /// The linked phone to try first (`LinkedPhoneAuthenticator`), if there is one now.
        public var linked:
            @Sendable (_ progress: @escaping @Sendable (HybridClientProgress) -> Void) async -> (
                any ClientAuthenticator
            )?

        public init(
            qrCode:
                @escaping @Sendable (_ progress: @escaping @Sendable (HybridClientProgress) -> Void) ->
                any ClientAuthenticator,
            linked:
                @escaping @Sendable (_ progress: @escaping @Sendable (HybridClientProgress) -> Void) async -> (
                    any ClientAuthenticator
                )? = { _ in nil }
        ) {
            self.qrCode = qrCode
            self.linked = linked
        }
    }

    public let key: SecurityKeyService
    public let mode: PhoneBridgeMode
    private let phones: Phones
    private let interface: any ProviderUserInterface
    /// Why nobody is asked (`--yes`): then a creation in `phoneFallback` stays on this computer, reported.
    private let unattendedReason: String?
    /// Where the previous request went: getNextAssertion after a phone's sign-in has nothing here to page through.
    private let lastRoute = Mutex<PhoneRoute?>(nil)

    public init(
        key: SecurityKeyService, mode: PhoneBridgeMode, phones: Phones, interface: any ProviderUserInterface,
        unattendedReason: String? = nil
    ) {
        self.key = key
        self.mode = mode
        self.phones = phones
        self.interface = interface
        self.unattendedReason = unattendedReason
    }

    /// Answers one CTAP request (command byte and CBOR) with status byte and CBOR, from the store or from a phone.
    public func answer(_ request: [UInt8], keepalive: @escaping @Sendable (KeepaliveStatus) -> Void) async -> [UInt8] {
        let (facts, creation) = await facts(of: request)
        let previous = lastRoute.withLock { $0 }
        var route = PhoneRoute.decide(facts, mode: mode, lastRoute: previous)
        if route == .askWhere { route = await askWhere(creation) }
        switch route {
        case .store, .askWhere:
            lastRoute.withLock { $0 = .store }
            return await key.answer(request, keepalive: keepalive)
        case .refuse(let error):
            return [error.rawValue]
        case .phone:
            lastRoute.withLock { $0 = .phone }
            key.authenticator.forgetPendingAssertions()
            return await forward(request, keepalive: keepalive)
        }
    }

    /// The shape of `request` the rule reads, and the store's answers to its two questions. A request that does not
    /// parse gets facts that send it to the store, whose authenticator answers its error.
    /// A makeCredential comes back parsed too, for the question of where to create it.
    private func facts(of request: [UInt8]) async -> (PhoneRouteFacts, MakeCredentialRequest?) {
        guard let byte = request.first else { return (PhoneRouteFacts(command: CTAPCommand(rawValue: 0)), nil) }
        let command = CTAPCommand(rawValue: byte)
        var facts = PhoneRouteFacts(command: command)
        guard command == .getAssertion || command == .makeCredential,
            let cbor = try? CBORDecoder(requiresCanonicalForm: false).decode(Array(request.dropFirst()))
        else { return (facts, nil) }
        if command == .getAssertion {
            guard let parsed = try? GetAssertionRequest(cbor: cbor) else {
                return (PhoneRouteFacts(command: command, storeCanAnswer: true), nil)
            }
            facts.userPresence = parsed.options["up"]
            facts.hasPinUvAuthParam = parsed.pinUvAuthParam != nil
            facts.storeCanAnswer = await key.authenticator.storeCanAnswer(parsed)
        } else {
            guard let parsed = try? MakeCredentialRequest(cbor: cbor) else {
                return (PhoneRouteFacts(command: command, storeExcludes: true), nil)
            }
            facts.hasPinUvAuthParam = parsed.pinUvAuthParam != nil
            facts.storeExcludes = await key.authenticator.storeHolds(
                excludeList: parsed.excludeList, relyingPartyID: parsed.relyingPartyID)
            return (facts, parsed)
        }
        return (facts, nil)
    }

    /// A creation in `phoneFallback`: the person picks this computer (the store) or a phone. No answer is a refusal,
    /// told to the browser as the person's. Unattended, this computer is taken.
    private func askWhere(_ parsed: MakeCredentialRequest?) async -> PhoneRoute {
        let question = ChoiceRequest.whereToCreate(
            relyingPartyID: parsed?.relyingPartyID ?? "", userName: parsed?.userName ?? parsed?.userDisplayName)
        if let unattendedReason {
            interface.report(.unattendedApprovalOn(reason: unattendedReason))
            interface.report(.autoChose(question, index: 0))
            return .store
        }
        switch await interface.choose(question) {
        case .given(0): return .store
        case .given(1): return .phone
        case .given, .declined: return .refuse(.operationDenied)
        case .cancelled: return .refuse(.keepaliveCancel)
        case .timedOut: return .refuse(.userActionTimeout)
        }
    }

    /// Sends `request` to the linked phone, or to a phone by QR code, and returns its answer unchanged.
    private func forward(_ request: [UInt8], keepalive: @escaping @Sendable (KeepaliveStatus) -> Void) async -> [UInt8]
    {
        let command = request.first ?? 0
        keepalive(.userPresenceNeeded)
        let interface = interface
        let progress: @Sendable (HybridClientProgress) -> Void = { event in
            if let status = BridgeKeepalive.status(after: event) { keepalive(status) }
            interface.report(.bridge(.session(event)))
        }
        if let linked = await phones.linked(progress) {
            interface.report(.bridge(.toPhone(command: command, linked: true)))
            do {
                return answered(try await PhoneRequestForwarder.forward(request, via: linked))
            } catch {
                if error.kind == .cancelled || Task.isCancelled { return failed(error) }
                interface.report(.bridge(.linkedPhoneFailed(reason: error.description)))
                keepalive(.userPresenceNeeded)
            }
        }
        interface.report(.bridge(.toPhone(command: command, linked: false)))
        do {
            return answered(try await PhoneRequestForwarder.forward(request, via: phones.qrCode(progress)))
        } catch {
            return failed(error)
        }
    }

    private func answered(_ answer: [UInt8]) -> [UInt8] {
        interface.report(.bridge(.answered(status: answer.first ?? 0)))
        return answer
    }

    /// The status a failed phone request answers: cancelled, timed out, or another failure.
    private func failed(_ error: AuthenticatorTransportError) -> [UInt8] {
        let status: CTAPError
        switch error.kind {
        case _ where Task.isCancelled, .cancelled: status = .keepaliveCancel
        case .timedOut: status = .userActionTimeout
        case .failed, .linkGone: status = .other
        }
        interface.report(.bridge(.failed(reason: error.description, status: status.rawValue)))
        return [status.rawValue]
    }
}
