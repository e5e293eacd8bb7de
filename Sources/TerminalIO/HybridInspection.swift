import Basics
import Foundation
import Hybrid

/// What `passkey inspect qr|advert|domain` shows: each decoded value as aligned text lines for a person, or as one
/// JSON object for scripts. The decoding is the `Hybrid` module's; this is the rendering, and the reading of an
/// advert given as text.
public enum HybridInspection {
    /// A QR code's fields. JSON leaves out the keys the code does not carry; text says "absent" and how a client
    /// reads the absence. The request type is text chosen by whoever made the code, so it is terminal-safe.
    public struct QRCodeReport {
        public let payload: QRCodePayload

        public init(_ payload: QRCodePayload) { self.payload = payload }

        public var jsonObject: [String: Any] {
            var object: [String: Any] = [
                "publicKey": payload.compressedPublicKey.hexString, "secret": payload.secret.hexString,
            ]
            object["knownDomains"] = payload.knownDomainCount
            object["timestamp"] = payload.timestamp
            object["stateAssisted"] = payload.stateAssisted
            object["requestType"] = payload.requestType?.rawValue
            return object
        }

        public var lines: [String] {
            var lines = [
                "public key      \(payload.compressedPublicKey.hexString)",
                "secret          \(payload.secret.hexString)",
                "known domains   \(payload.knownDomainCount.map(String.init) ?? "absent (read as 0)")",
            ]
            if let seconds = payload.timestamp, seconds < 253_402_300_800 {
                let date = Date(timeIntervalSince1970: Double(seconds))
                lines.append("timestamp       \(seconds) (\(ISO8601DateFormatter().string(from: date)))")
            } else {
                lines.append("timestamp       \(payload.timestamp.map(String.init) ?? "absent")")
            }
            lines.append("state-assisted  \(payload.stateAssisted.map { $0 ? "true" : "false" } ?? "absent")")
            if let type = payload.requestType {
                let effective = type.effective == type ? "" : ", read as \(type.effective.rawValue)"
                lines.append(
                    "request type    \(type.rawValue.terminalSafe) (\(Self.name(of: type.effective))\(effective))")
            } else {
                lines.append("request type    absent (read as ga, \(Self.name(of: .getAssertion)))")
            }
            return lines
        }

        static func name(of type: HybridRequestType) -> String {
            switch type {
            case .makeCredential: "makeCredential"
            case .digitalCredentialPresentation: "digital credential presentation"
            case .digitalCredentialIssuance: "digital credential issuance"
            default: "getAssertion"
            }
        }
    }

    /// An advert trial-decrypted with a QR code's secret: what it names, or why it is not this QR code's. An advert
    /// that does not decrypt is a finding, not an error.
    public struct AdvertReport {
        public let tunnelID: TunnelID
        public let outcome: Result<AdvertPlaintext, AdvertError>

        public init(secret: [UInt8], advert: [UInt8]) {
            tunnelID = KeyDerivation.tunnelID(qrSecret: secret)
            outcome = Result { () throws(AdvertError) in try KeyDerivation.eidKey(qrSecret: secret).decrypt(advert) }
        }

        func connectURL(_ plaintext: AdvertPlaintext) -> String {
            TunnelServerEndpoint.domain(plaintext.domain).url(for: .connect(plaintext.routingID, tunnelID))
        }

        public var jsonObject: [String: Any] {
            switch outcome {
            case .failure(let error):
                ["valid": false, "reason": error.description]
            case .success(let plaintext):
                [
                    "valid": true, "nonce": plaintext.nonce.hexString, "routingId": plaintext.routingID.hex,
                    "domainId": Int(plaintext.domain.id), "tunnelId": tunnelID.hex,
                    "connectURL": connectURL(plaintext),
                ]
            }
        }

        public var lines: [String] {
            switch outcome {
            case .failure(let error):
                ["valid        no: \(error)"]
            case .success(let plaintext):
                [
                    "valid        yes", "nonce        \(plaintext.nonce.hexString)",
                    "routing ID   \(plaintext.routingID.hex)", "domain       \(plaintext.domain)",
                    "tunnel ID    \(tunnelID.hex)", "connect URL  \(connectURL(plaintext))",
                ]
            }
        }
    }

    /// A tunnel server domain ID and its host.
    public struct DomainReport {
        public let domain: TunnelDomain

        public init(_ domain: TunnelDomain) { self.domain = domain }

        public var jsonObject: [String: Any] { ["id": Int(domain.id), "host": domain.host] }
        public var lines: [String] { ["id    \(domain.id)", "host  \(domain.host)"] }
    }

    /// Why the text given as an advert is none.
    public struct AdvertInputError: Error, CustomStringConvertible {
        public let description: String
    }

    /// The 20 bytes of an advert given in hex: the bytes themselves, or the caBLE service data found in whole
    /// advertising data (AD structures, UUID 0xFDE2 or 0xFFF9).
    public static func serviceData(fromHex text: String) throws(AdvertInputError) -> [UInt8] {
        guard let bytes = [UInt8](hex: text) else { throw AdvertInputError(description: "the advert must be hex") }
        if bytes.count == EIDKey.advertByteCount { return bytes }
        let prefix = "the advert is \(bytes.count) bytes, not 20, and not advertising data"
        let data: AdvertisingData
        do {
            data = try AdvertisingData(bytes: bytes)
        } catch {
            throw AdvertInputError(description: "\(prefix): \(error)")
        }
        guard let advert = data.caBLEAdvert else {
            throw AdvertInputError(description: "\(prefix) with 20 bytes of service data for UUID 0xFDE2 or 0xFFF9")
        }
        return advert
    }
}
