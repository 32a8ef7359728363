package ginlock

import "github.com/gin-gonic/gin"

// KeyOf is the key Key(parts...) gives for c (tests only).
func KeyOf(c *gin.Context, parts ...Part) (string, error) { return join(parts).Build(c) }
