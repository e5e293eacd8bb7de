import CZbar

/// Finds and decodes QR codes in images with zbar.
///
/// Only the QR code symbology is enabled, with `ZBAR_CFG_BINARY` set so byte-mode payloads come back as the bytes
/// the symbol holds rather than converted from a guessed character set. Payloads are returned as UTF-8 text
/// (invalid sequences become U+FFFD).
public enum QRImageReader {
    /// The most pixels an image may have (64 Mi): checked on the header before any pixel buffer is allocated.
    public static let maximumPixelCount = 64 * 1024 * 1024
    /// The largest file `decode(contentsOf:)` reads (256 MiB); larger files are refused without being read.
    public static let maximumFileSize = 256 * 1024 * 1024

    /// Every QR code in the PNG or PGM file at `path`, in the order zbar reports them: one or more.
    ///
    /// Throws `.noQRCode` when there is none, and the errors of `GrayImage(contentsOf:)` for a file that is not
    /// a readable PNG or PGM image within the limits.
    public static func decode(contentsOf path: String) throws(QRImageError) -> [String] {
        let texts = try decode(GrayImage(contentsOf: path))
        guard !texts.isEmpty else { throw .noQRCode(path: path) }
        return texts
    }

    /// Every QR code in 8-bit gray pixels (row-major, `width × height` bytes, 0 black): possibly none.
    public static func decode(grayPixels: [UInt8], width: Int, height: Int) throws(QRImageError) -> [String] {
        try decode(GrayImage(width: width, height: height, pixels: grayPixels))
    }

    /// Every QR code in `image`: possibly none.
    public static func decode(_ image: GrayImage) throws(QRImageError) -> [String] {
        guard let scanner = zbar_image_scanner_create() else { throw .scannerFailed }
        defer { zbar_image_scanner_destroy(scanner) }
        zbar_image_scanner_set_config(scanner, ZBAR_NONE, ZBAR_CFG_ENABLE, 0)
        zbar_image_scanner_set_config(scanner, ZBAR_QRCODE, ZBAR_CFG_ENABLE, 1)
        zbar_image_scanner_set_config(scanner, ZBAR_QRCODE, ZBAR_CFG_BINARY, 1)

        guard let zbarImage = zbar_image_create() else { throw .scannerFailed }
        defer { zbar_image_destroy(zbarImage) }
        zbar_image_set_format(zbarImage, y800)
        zbar_image_set_size(zbarImage, UInt32(image.width), UInt32(image.height))
        // zbar must not keep a pointer into the array once the closure returns: read the symbols inside it,
        // then detach the data.
        let texts: [String]? = image.pixels.withUnsafeBytes { buffer in
            zbar_image_set_data(zbarImage, buffer.baseAddress, UInt(buffer.count), nil)
            defer { zbar_image_set_data(zbarImage, nil, 0, nil) }
            guard zbar_scan_image(scanner, zbarImage) >= 0 else { return nil }
            var texts: [String] = []
            var symbol = zbar_image_first_symbol(zbarImage)
            while let current = symbol {
                if zbar_symbol_get_type(current) == ZBAR_QRCODE, let data = zbar_symbol_get_data(current) {
                    let bytes = UnsafeRawBufferPointer(start: data, count: Int(zbar_symbol_get_data_length(current)))
                    texts.append(String(decoding: bytes, as: UTF8.self))
                }
                symbol = zbar_symbol_next(current)
            }
            return texts
        }
        guard let texts else { throw .scannerFailed }
        return texts
    }

    /// The `Y800` fourcc (8-bit gray), as `zbar_fourcc('Y','8','0','0')` would give; the macro is not imported.
    private static let y800: UInt = 0x59 | 0x38 << 8 | 0x30 << 16 | 0x30 << 24
}
