"""Text of the display bar and the export buttons (read by assets/present.js)."""

TEXT = {
    "bar": "Display",
    "projector": "Projector",
    "projector_help": "Large type, thick lines and high contrast for a projected screen "
                      "(link: add ?projector=1 to the address)",
    "dark": "Dark",
    "dark_help": "Dark theme; charts switch to colours that stay readable on it "
                 "(link: add ?dark=1 to the address)",
    "export_group": "Export",
    "png": "Download this chart as PNG",
    "svg": "Download this chart as SVG",
    "html": "Download this chart as a standalone HTML file",
    "csv": "Download this table as CSV",
    "view_html": "Download this view as a standalone HTML file",
    "space": "space",
}
