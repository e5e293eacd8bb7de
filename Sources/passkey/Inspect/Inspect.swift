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

        @OptionGroup var format: JSONOption
        @Option(
            help: ArgumentHelp("Read the QR code from a PNG or PGM image.", valueName: "file"),
            completion: .file(extensions: ["png", "pgm"]))
        var image: String?
        @Argument(help: "The FIDO:/… URL the QR code holds.") var url: String?

        func validate() throws {
            guard (url == nil) != (image == nil) else {
                throw ValidationError("Give exactly one of a URL and --image.")
            }
        }

        @OptionGroup var verbosity: OutputOptions

        func run() throws {
            let payload = try QRCodePayload(url: image.map(Self.fidoURL(inImage:)) ?? url ?? "")
            let report = HybridInspection.QRCodeReport(payload)
            if format.json {
                printJSON(JSONOutput.text(report.jsonObject))
            } else {
                printLine(report.lines.joined(separator: "\n"))
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
        @OptionGroup var format: JSONOption
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

        @OptionGroup var verbosity: OutputOptions

        func run() throws {
            let secret = try qrSecret.flatMap { [UInt8](hex: $0) } ?? QRCodePayload(url: qrURL ?? "").secret
            let advertBytes: [UInt8]
            do {
                advertBytes = try HybridInspection.serviceData(fromHex: advert)
            } catch {
                throw CommandFailure(error.description)
            }
            let report = HybridInspection.AdvertReport(secret: secret, advert: advertBytes)
            if format.json {
                printJSON(JSONOutput.text(report.jsonObject))
            } else {
                printLine(report.lines.joined(separator: "\n"))
            }
        }
    }

    struct Domain: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Show the host name of a tunnel server domain ID (0, 1, or 256–65535).")

        @OptionGroup var format: JSONOption
        @Argument(help: "The domain ID from an advert.") var id: UInt16

        @OptionGroup var verbosity: OutputOptions

        func run() throws {
            let report = HybridInspection.DomainReport(try TunnelDomain(id: id))
            if format.json {
                printJSON(JSONOutput.text(report.jsonObject))
            } else {
                printLine(report.lines.joined(separator: "\n"))
            }
        }
    }
}
