import CBOR
import Foundation
import Synchronization

extension Authenticator {
    /// authenticatorConfig subcommands (CTAP 2.1 §6.11).
    enum ConfigSubcommand: Int {
        case enableEnterpriseAttestation = 0x01
        case toggleAlwaysUv = 0x02
        case setMinPINLength = 0x03
    }

    /// The most relying parties setMinPINLength accepts for the minPinLength extension (getInfo 0x10).
    static let maximumMinPINLengthRelyingParties = 8

    /// authenticatorConfig (CTAP 2.1 §6.11). Built-in user verification is always configured here, so every
    /// subcommand needs a pinUvAuthToken with the acfg permission, over
    /// `32 × 0xFF ‖ 0x0D ‖ subCommand ‖ subCommandParams`.
    func authenticatorConfig(_ request: SubcommandRequest) async throws(CTAPError) -> CBORValue? {
        guard let subcommand = ConfigSubcommand(rawValue: request.subcommand) else { throw .invalidSubcommand }
        guard let param = request.pinUvAuthParam else { throw .pinUvAuthTokenRequired }
        guard let version = request.pinUvAuthProtocol else { throw .missingParameter }
        let parameters = PinUvAuthParameters(param: param, pinUvAuthProtocol: try Self.supportedProtocol(version))
        let subcommandParameters = try request.parameters?.parameters()
        _ = try authorizeToken(
            parameters, message: [UInt8](repeating: 0xFF, count: 32) + [0x0D] + request.authenticatedBytes,
            permission: .authenticatorConfiguration, relyingPartyID: nil)

        var settings = try await loadSettings()
        switch subcommand {
        case .enableEnterpriseAttestation:
            // Enterprise attestation is not supported (getInfo has no `ep`); OpenSK answers the same way.
            throw .invalidParameter
        case .toggleAlwaysUv:
            settings.alwaysUV.toggle()
        case .setMinPINLength:
            let newLength = try subcommandParameters?.optional(1)?.int() ?? settings.minimumPINLength
            let relyingParties = try subcommandParameters?.optional(2)?.array().map { (value) throws(CTAPError) in
                try value.text()
            }
            let forceChange = try subcommandParameters?.optional(3)?.bool() ?? false
            // The minimum only ever grows (until authenticatorReset) and a PIN is at most 63 bytes.
            guard newLength >= settings.minimumPINLength, newLength <= 63 else { throw .pinPolicyViolation }
            if let relyingParties, relyingParties.count > Self.maximumMinPINLengthRelyingParties {
                throw .pinPolicyViolation
            }
            if forceChange && !settings.isPINSet { throw .pinNotSet }
            settings.minimumPINLength = newLength
            if let relyingParties { settings.minimumPINLengthRelyingParties = relyingParties }
            if forceChange || (settings.isPINSet && newLength > settings.pinCodePointCount) {
                settings.forcePINChange = true
            }
        }
        try await saveSettings(settings)
        return nil
    }
}
