import Basics
import ArgumentParser
import CBOR
import Foundation
import Hybrid
import QRImageIO
import TerminalIO

extension Passkey {
    struct Inspect: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract:
                "Decode hybrid (caBLE v2) QR codes, BLE adverts and tunnel server domain IDs; check origins; read Smart App Banners.",
            discussion: """
                Offline: nothing is scanned, advertised or connected to (see Docs/Hybrid.md), except that \
                `origin --related-origins` fetches an RP ID's /.well-known/webauthn (see Docs/Client.md).
                """,
            subcommands: [QRCode.self, Advert.self, Domain.self, Origin.self, Banner.self]
        )
    }
}

extension Passkey.Inspect {
    struct QRCode: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "qr", abstract: "Decode the FIDO:/ URL of a hybrid QR code.",
            discussion: """
                Give the URL, or a PNG or PGM picture of the QR code with --image: it must hold exactly one \
                FIDO:/ QR code (other QR codes are ignored).
                """
        )

        @Flag(help: "Print one JSON object.") var json = false
        @Option(help: ArgumentHelp("Read the QR code from a PNG or PGM image.", valueName: "file"))
        var image: String?
        @Argument(help: "The FIDO:/… URL the QR code holds.") var url: String?

        func validate() throws {
            guard (url == nil) != (image == nil) else {
                throw ValidationError("Give exactly one of a URL and --image.")
            }
        }

        func run() throws {
            let payload = try QRCodePayload(url: image.map(Self.fidoURL(inImage:)) ?? url ?? "")
            var object: [String: Any] = [
                "publicKey": payload.compressedPublicKey.hexString,
                "secret": payload.secret.hexString,
            ]
            object["knownDomains"] = payload.knownDomainCount
            object["timestamp"] = payload.timestamp
            object["stateAssisted"] = payload.stateAssisted
            object["requestType"] = payload.requestType?.rawValue
            if json {
                print(try jsonText(object))
                return
            }
            print("public key      \(payload.compressedPublicKey.hexString)")
            print("secret          \(payload.secret.hexString)")
            print("known domains   \(payload.knownDomainCount.map(String.init) ?? "absent (read as 0)")")
            if let seconds = payload.timestamp, seconds < 253_402_300_800 {
                let date = Date(timeIntervalSince1970: Double(seconds))
                print("timestamp       \(seconds) (\(ISO8601DateFormatter().string(from: date)))")
            } else {
                print("timestamp       \(payload.timestamp.map(String.init) ?? "absent")")
            }
            print("state-assisted  \(payload.stateAssisted.map { $0 ? "true" : "false" } ?? "absent")")
            if let type = payload.requestType {
                let effective = type.effective == type ? "" : ", read as \(type.effective.rawValue)"
                print("request type    \(type.rawValue.terminalSafe) (\(Self.name(of: type.effective))\(effective))")
            } else {
                print("request type    absent (read as ga, \(Self.name(of: .getAssertion)))")
            }
        }

        /// The one `FIDO:/` URL among the QR codes in the image at `path`.
        static func fidoURL(inImage path: String) throws -> String {
            let texts = try QRImageReader.decode(contentsOf: path)
            let urls = texts.filter { $0.utf8.count >= 6 && $0.prefix(6).lowercased() == "fido:/" }
            switch (urls.count, texts.count) {
            case (1, _):
                return urls[0]
            case (0, 1):
                let shown = texts[0].count > 60 ? String(texts[0].prefix(60)) + "…" : texts[0]
                throw CommandFailure("the QR code in \(path) is not a FIDO:/ URL: \"\(shown)\"")
            case (0, let count):
                throw CommandFailure("none of the \(count) QR codes in \(path) is a FIDO:/ URL")
            case (let count, _):
                throw CommandFailure("\(path) holds \(count) FIDO:/ QR codes; crop the image to one")
            }
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

    struct Advert: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Trial-decrypt a caBLE v2 BLE advert with the secret of a QR code.",
            discussion: """
                ADVERT is the 20-byte service data in hex, or whole advertising data (AD structures) holding it \
                under UUID 0xFDE2 or 0xFFF9. An advert that does not decrypt prints `valid: false` with the reason \
                and exits 0; malformed arguments exit non-zero.
                """
        )

        @Option(name: .customLong("qr-secret"), help: ArgumentHelp("The QR code's 16-byte secret.", valueName: "hex"))
        var qrSecret: String?
        @Option(name: .customLong("qr"), help: ArgumentHelp("The QR code's FIDO:/ URL instead.", valueName: "url"))
        var qrURL: String?
        @Flag(help: "Print one JSON object.") var json = false
        @Argument(help: ArgumentHelp("The advert in hex.", valueName: "advert")) var advert: String

        func validate() throws {
            guard (qrSecret == nil) != (qrURL == nil) else {
                throw ValidationError("Give exactly one of --qr-secret and --qr.")
            }
            if let qrSecret {
                guard let bytes = [UInt8](hex: qrSecret), bytes.count == QRCodePayload.secretByteCount else {
                    throw ValidationError("--qr-secret must be 16 bytes in hex (32 hex digits).")
                }
            }
            guard [UInt8](hex: advert) != nil else { throw ValidationError("The advert must be hex.") }
        }

        func run() throws {
            let secret = try qrSecret.flatMap { [UInt8](hex: $0) } ?? QRCodePayload(url: qrURL ?? "").secret
            let advertBytes = try Self.serviceData(fromHex: advert)
            let key = KeyDerivation.eidKey(qrSecret: secret)
            let tunnelID = KeyDerivation.tunnelID(qrSecret: secret)
            let plaintext: AdvertPlaintext
            do {
                plaintext = try key.decrypt(advertBytes)
            } catch {
                if json {
                    print(try jsonText(["valid": false, "reason": error.description]))
                } else {
                    print("valid        no: \(error)")
                }
                return
            }
            let url = TunnelServerEndpoint.domain(plaintext.domain).url(for: .connect(plaintext.routingID, tunnelID))
            if json {
                let object: [String: Any] = [
                    "valid": true,
                    "nonce": plaintext.nonce.hexString,
                    "routingID": plaintext.routingID.hex,
                    "domainID": Int(plaintext.domain.id),
                    "tunnelID": tunnelID.hex,
                    "connectURL": url,
                ]
                print(try jsonText(object))
                return
            }
            print("valid        yes")
            print("nonce        \(plaintext.nonce.hexString)")
            print("routing ID   \(plaintext.routingID.hex)")
            print("domain       \(plaintext.domain)")
            print("tunnel ID    \(tunnelID.hex)")
            print("connect URL  \(url)")
        }

        /// The 20 bytes themselves, or the caBLE service data found in advertising data.
        static func serviceData(fromHex text: String) throws -> [UInt8] {
            guard let bytes = [UInt8](hex: text) else { throw CommandFailure("the advert must be hex") }
            if bytes.count == EIDKey.advertByteCount { return bytes }
            let prefix = "the advert is \(bytes.count) bytes, not 20, and not advertising data"
            let data: AdvertisingData
            do {
                data = try AdvertisingData(bytes: bytes)
            } catch {
                throw CommandFailure("\(prefix): \(error)")
            }
            guard let advert = data.caBLEAdvert else {
                throw CommandFailure("\(prefix) with 20 bytes of service data for UUID 0xFDE2 or 0xFFF9")
            }
            return advert
        }
    }

    struct Domain: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Show the host name of a tunnel server domain ID (0, 1, or 256–65535).")

        @Flag(help: "Print one JSON object.") var json = false
        @Argument(help: "The domain ID from an advert.") var id: UInt16

        func run() throws {
            let domain = try TunnelDomain(id: id)
            if json {
                print(try jsonText(["id": Int(domain.id), "host": domain.host]))
            } else {
                print("id    \(domain.id)")
                print("host  \(domain.host)")
            }
        }
    }
}

/// One JSON object with sorted keys.
private func jsonText(_ object: [String: Any]) throws -> String {
    let data = try JSONSerialization.data(withJSONObject: object, options: [.prettyPrinted, .sortedKeys])
    return String(decoding: data, as: UTF8.self)
}
